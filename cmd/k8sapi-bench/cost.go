package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/devstack"
	"github.com/excloud/k8sapi/internal/devstack/localaws"
	"github.com/excloud/k8sapi/internal/devstack/samtemplate"
	"github.com/excloud/k8sapi/internal/simulator"
)

// costRun is what the cost part counted on its own local stack.
type costRun struct {
	logs             *costLogs
	memory           map[string]int // MB by function, template.yaml
	reconcilerEvery  time.Duration
	retentionDays    int
	founding, atRest dbDelta
	s3Objects        int
	s3Bytes          int64
	started          time.Time
	took             time.Duration
}

// dbDelta is what a phase wrote into the stack's tables.
type dbDelta struct{ rows, bytes int64 }

// statsFlush is how long a backend may keep its table counts before
// PostgreSQL publishes them (an idle backend's, 10 s).
const statsFlush = 11 * time.Second

// runCost starts a local stack of its own (stand-in VMs, real functions,
// its own port and database), founds a 3 + 3 cluster, lets it rest while
// driving the node calls the stand-ins do not make, and counts.
func runCost() (*costRun, error) {
	t, err := samtemplate.LoadTemplate("template.yaml")
	if err != nil {
		return nil, err
	}
	days, err := strconv.Atoi(t.Parameters["EtcdSnapshotRetentionDays"])
	if err != nil {
		return nil, fmt.Errorf("template.yaml: EtcdSnapshotRetentionDays: %w", err)
	}
	run := &costRun{logs: newCostLogs(), memory: map[string]int{}, retentionDays: days, started: time.Now()}
	for _, f := range t.Functions {
		run.memory[f.LogicalID] = f.MemorySize
		if f.LogicalID == "ReconcilerFunction" {
			run.reconcilerEvery = f.Schedule
		}
	}
	st, stop, err := startCostStack(run.logs)
	if err != nil {
		return nil, err
	}
	defer stop()
	err = run.measure(st)
	run.took = time.Since(run.started)
	return run, err
}

// startCostStack runs devstack in this process, its function output into logs.
func startCostStack(logs *costLogs) (stack, func(), error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return stack{}, nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir := filepath.Join(benchDir, "cost-stack")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	go func() {
		done <- devstack.Run(ctx, devstack.Options{Root: ".", LocalDir: dir, Port: port, Database: "k8sapi_bench_cost",
			BootVMs: true, Log: quiet, Out: io.Discard, FunctionOut: logs})
	}()
	stop := func() { cancel(); <-done }
	log.Printf("cost: starting a local stack on port %d (building the functions) ...", port)
	for deadline := time.Now().Add(10 * time.Minute); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		select {
		case err := <-done:
			return stack{}, nil, fmt.Errorf("local stack: %v", err)
		default:
		}
		if env, err := devstack.ReadStackEnv(filepath.Join(dir, devstack.StackEnvFile)); err == nil && healthy(env["API_URL"]) {
			return stack{env: env}, stop, nil
		}
	}
	stop()
	return stack{}, nil, fmt.Errorf("the cost stack was not up in 10 minutes")
}

// measure is the founding, then the rest, each phase's table writes read
// after PostgreSQL has published them.
func (run *costRun) measure(st stack) error {
	ctx := context.Background()
	db, err := pgxpool.New(ctx, st.get("DATABASE_URL"))
	if err != nil {
		return err
	}
	defer db.Close()
	c := newClient(st)
	time.Sleep(statsFlush) // the stack's own start settles
	before, err := tableTotals(ctx, db)
	if err != nil {
		return err
	}
	run.logs.setPhase("founding")
	cl, err := foundThreePlusThree(c)
	if err != nil {
		return err
	}
	run.logs.setPhase("settle")
	time.Sleep(statsFlush)
	mid, err := tableTotals(ctx, db)
	if err != nil {
		return err
	}
	run.founding = mid.minus(before)
	run.logs.setPhase("rest")
	if err := rest(c, cl); err != nil {
		return err
	}
	run.logs.setPhase("settle")
	time.Sleep(statsFlush)
	end, err := tableTotals(ctx, db)
	if err != nil {
		return err
	}
	run.atRest = end.minus(mid)
	run.s3Objects, run.s3Bytes, err = snapshotObjects(ctx, st)
	return err
}

// tableTotals are the rows written (inserted, updated, deleted) into the
// stack's tables so far and their size with indexes and TOAST.
func tableTotals(ctx context.Context, db *pgxpool.Pool) (dbDelta, error) {
	var d dbDelta
	err := db.QueryRow(ctx, `SELECT coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0)::bigint,
		coalesce(sum(pg_total_relation_size(relid)), 0)::bigint FROM pg_stat_user_tables`).Scan(&d.rows, &d.bytes)
	return d, err
}

func (d dbDelta) minus(o dbDelta) dbDelta { return dbDelta{d.rows - o.rows, d.bytes - o.bytes} }

// snapshotObjects counts the objects in the stack's snapshot bucket.
func snapshotObjects(ctx context.Context, st stack) (int, int64, error) {
	cli := s3.NewFromConfig(localaws.AWSConfig(st.get("AWS_ENDPOINT_URL")), func(o *s3.Options) { o.UsePathStyle = true })
	out, err := cli.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(st.get("ETCD_SNAPSHOT_BUCKET"))})
	if err != nil {
		return 0, 0, err
	}
	var size int64
	for _, o := range out.Contents {
		size += aws.ToInt64(o.Size)
	}
	return len(out.Contents), size, nil
}

// cluster33 is the founded cluster's VMs' credentials, by role.
type cluster33 struct {
	id          int64
	cp, workers []vmCreds
	poolPath    string
}

// foundThreePlusThree founds 3 control-plane nodes and a pool of 3
// workers and waits for every stand-in to report ready.
func foundThreePlusThree(c *client) (cluster33, error) {
	f, _, err := c.found(1, 3, "ecdsa-p256")
	if err != nil {
		return cluster33{}, err
	}
	cl := cluster33{id: f.ClusterID, poolPath: fmt.Sprintf("%s/clusters/%d/node-pools/workers", c.st.get("API_URL"), f.ClusterID)}
	body := `{"name":"workers","count":3,"instance_type":"c1.large","image_id":1}`
	if _, err := c.operator("POST", fmt.Sprintf("%s/clusters/%d/node-pools", c.st.get("API_URL"), f.ClusterID), body, nil); err != nil {
		return cl, err
	}
	for _, vm := range f.VMIDs {
		v, err := c.credentials(vm, f.ClusterID)
		if err != nil {
			return cl, err
		}
		cl.cp = append(cl.cp, v)
	}
	return cl, c.waitReady(&cl)
}

// operator is one call with the dev token that must answer 2xx, its body decoded into out.
func (c *client) operator(method, url, body string, out any) ([]byte, error) {
	resp, b, _, err := c.do(method, url, []byte(body), map[string]string{"Authorization": "Bearer " + c.st.get("DEV_TOKEN"), "Content-Type": "application/json"})
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%s %s: %d %s", method, url, resp.StatusCode, trim(b))
	}
	if out != nil {
		return b, json.Unmarshal(b, out)
	}
	return b, nil
}

// waitReady polls the cluster and its pool until both are ready, then
// takes the workers' credentials.
func (c *client) waitReady(cl *cluster33) error {
	var cluster struct {
		Status string `json:"status"`
	}
	var pool struct {
		Nodes []struct {
			VMID  int64  `json:"vm_id"`
			Phase string `json:"phase"`
		} `json:"nodes"`
	}
	for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		if _, err := c.operator("GET", fmt.Sprintf("%s/clusters/%d", c.st.get("API_URL"), cl.id), "", &cluster); err != nil {
			return err
		}
		if _, err := c.operator("GET", cl.poolPath, "", &pool); err != nil {
			return err
		}
		ready := 0
		for _, n := range pool.Nodes {
			if n.Phase == "ready" {
				ready++
			}
		}
		if cluster.Status != "active" || ready != 3 {
			continue
		}
		for _, n := range pool.Nodes {
			v, err := c.credentials(n.VMID, cl.id)
			if err != nil {
				return err
			}
			cl.workers = append(cl.workers, v)
		}
		return nil
	}
	return fmt.Errorf("cluster %d not ready in 5 minutes (status %q, %d workers)", cl.id, cluster.Status, len(pool.Nodes))
}

// restFor is how long the cluster rests: past the stand-ins' first
// snapshot asks and membership ask after ready (vmstandin), with the
// snapshot the reconciler schedules taken and reported.
const restFor = 75 * time.Second

// rest lets the stand-ins make their calls at rest (renewals, snapshot
// and membership asks, the snapshot) and makes the ones they do not: each
// node's health report and each control-plane node's CRL ask, every
// HealthEvery.
func rest(c *client, cl cluster33) error {
	health := `{"checks":{"kubelet":{"ok":true},"etcd":{"ok":true},"apiserver":{"ok":true}}}`
	worker := `{"checks":{"kubelet":{"ok":true}}}`
	for end := time.Now().Add(restFor); time.Now().Before(end); time.Sleep(bundle.HealthEvery / 2) {
		for _, v := range cl.cp {
			if err := c.vmCall(v, "POST", bundle.HealthPathTemplate, health); err != nil {
				return err
			}
			if err := c.vmCall(v, "GET", bundle.EtcdCRLPathTemplate, ""); err != nil {
				return err
			}
		}
		for _, v := range cl.workers {
			if err := c.vmCall(v, "POST", bundle.WorkerHealthPathTemplate, worker); err != nil {
				return err
			}
		}
	}
	return nil
}

// vmCall is one call of v's on path (a bundle path template) that must answer 2xx.
func (c *client) vmCall(v vmCreds, method, path, body string) error {
	url := c.st.get("API_URL") + strings.Replace(path, "{vm_id}", strconv.FormatInt(v.vm, 10), 1)
	resp, b, _, err := c.do(method, url, []byte(body), map[string]string{
		simulator.IMDSTokenHeader: v.imds, "Authorization": "Bearer " + v.access, "Content-Type": "application/json"})
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %d %s", method, url, resp.StatusCode, trim(b))
	}
	return nil
}
