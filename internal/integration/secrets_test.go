package integration

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/excloud/k8sapi/internal/simulator"
	"github.com/excloud/k8sapi/internal/stacktest"
	"github.com/excloud/k8sapi/internal/testenv"
)

// TestNoSecretsAtRestOrInLogs runs every route, failures included, then
// scans every column of every table and the handlers' debug-level logs for
// private keys, every token the test issued and every cluster's data key.
func TestNoSecretsAtRestOrInLogs(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	var tokens []string
	keep := func(tok ...string) { tokens = append(tokens, tok...) }
	keep(s.Token(1), s.Token(2))

	// A full run: founding (ECDSA, RSA, an idempotent replay, a compensated
	// failure, a KMS-free list), reads, bundles for every VM, refusals, a
	// tampered fetch, an admin kubeconfig issued and listed, and a delete.
	c1 := s.Found(1, stacktest.ThreeNodes)
	c2 := s.Found(2, `{"control_plane_image_id":1,"control_plane_instance_type":"e2.medium","subnet_id":2,"key_algorithm":"rsa-2048"}`)
	h := s.Bearer(1)
	h["Idempotency-Key"] = "secrets-run"
	for range 2 {
		if r := stacktest.Do(t, http.MethodPost, s.api.URL+"/clusters", `{"control_plane_image_id":1,"control_plane_instance_type":"e2.medium","subnet_id":1}`, h); r.Status != 201 {
			t.Fatalf("idempotent create = %d %s", r.Status, r.Body)
		}
	}
	s.sim.SetFaults(simulator.Faults{FailInstanceCreateOn: 2})
	if r := stacktest.Do(t, http.MethodPost, s.api.URL+"/clusters", stacktest.ThreeNodes, s.Bearer(1)); r.Status != http.StatusBadGateway {
		t.Fatalf("compensated create = %d", r.Status)
	}
	s.sim.SetFaults(simulator.Faults{})
	stacktest.Do(t, http.MethodGet, s.api.URL+"/clusters", "", s.Bearer(1))
	stacktest.Do(t, http.MethodGet, s.api.URL+"/clusters/"+itoa(c1.ClusterID), "", s.Bearer(2))
	for _, vm := range append(append([]int64{}, c1.ControlPlaneVMIDs...), c2.ControlPlaneVMIDs...) {
		imds, access := s.VMCredentials(vm)
		keep(imds, access)
		if r := s.FetchBundle(vm, imds, access); r.Status != 200 {
			t.Fatalf("bundle of vm %d = %d", vm, r.Status)
		}
		s.FetchBundle(vm, imds, "wrong-"+access)
		s.FetchBundle(c1.ControlPlaneVMIDs[0], imds, access) // another VM's, for most
	}
	expired, _ := simulator.IssuePrincipalToken(ctx, s.pool, 1, "principal", -time.Minute)
	scoped, _ := simulator.IssuePrincipalToken(ctx, s.pool, 1, "api-key", time.Hour)
	keep(expired, scoped)
	for _, tok := range []string{expired, scoped} {
		stacktest.Do(t, http.MethodPost, s.api.URL+"/clusters", stacktest.ThreeNodes, map[string]string{"Authorization": "Bearer " + tok})
	}
	// Every bit of one byte flipped: writing a zero byte left the key
	// whole whenever that byte was zero already (1 run in 256).
	if _, err := s.pool.Exec(ctx, `UPDATE node_identities SET key_sealed = set_byte(key_sealed, 29, get_byte(key_sealed, 29) # 255)
		WHERE name = 'apiserver' AND node_id = (SELECT id FROM kube_nodes WHERE vm_id = $1)`, c2.ControlPlaneVMIDs[0]); err != nil {
		t.Fatal(err)
	}
	imds, access := s.VMCredentials(c2.ControlPlaneVMIDs[0])
	keep(imds, access)
	if r := s.FetchBundle(c2.ControlPlaneVMIDs[0], imds, access); r.Status != 500 {
		t.Fatalf("tampered fetch = %d", r.Status)
	}
	// Admin kubeconfigs issued and listed: their record holds no key.
	if r := stacktest.Do(t, http.MethodPost, s.api.URL+"/clusters/"+itoa(c1.ClusterID)+"/kubeconfig", `{"ttl":"1h"}`, s.Bearer(1)); r.Status != 201 {
		t.Fatalf("kubeconfig = %d %s", r.Status, r.Body)
	}
	stacktest.Do(t, http.MethodGet, s.api.URL+"/clusters/"+itoa(c1.ClusterID)+"/kubeconfigs", "", s.Bearer(1))
	dataKeys := s.dataKeys(t)
	if r := stacktest.Do(t, http.MethodDelete, s.api.URL+"/clusters/"+itoa(c1.ClusterID), "", s.Bearer(1)); r.Status != 200 {
		t.Fatalf("delete = %d", r.Status)
	}

	// At rest: every column of every table, whatever its type. Certificates
	// are PEM at rest by design; private keys never are.
	needles := map[string]string{"a private key": "PRIVATE KEY"}
	for i, tok := range tokens {
		needles[fmt.Sprintf("token %d", i)] = tok
	}
	for i, k := range dataKeys {
		needles[fmt.Sprintf("data key %d (hex)", i)] = hex.EncodeToString(k)
		needles[fmt.Sprintf("data key %d (base64)", i)] = base64.StdEncoding.EncodeToString(k)
	}
	cols := s.columns(t)
	for _, c := range cols {
		for what, needle := range needles {
			s.assertAbsent(t, c, what, []byte(needle))
		}
		for i, k := range dataKeys {
			s.assertAbsent(t, c, fmt.Sprintf("data key %d (raw)", i), k)
		}
	}

	// In the logs, at debug level.
	logs := s.logs.String()
	if !strings.Contains(logs, `"msg":"request"`) || !strings.Contains(logs, "sealed key material does not open") {
		t.Fatalf("the logs were not captured:\n%s", logs)
	}
	needles["a PEM block"] = "-----BEGIN"
	for what, needle := range needles {
		if strings.Contains(logs, needle) {
			t.Errorf("the logs hold %s", what)
		}
	}
	for i, k := range dataKeys {
		if strings.Contains(logs, string(k)) {
			t.Errorf("the logs hold data key %d (raw)", i)
		}
	}
	t.Logf("scanned %d columns for %d secrets (%d tokens, %d data keys) and %d log bytes", len(cols), len(needles)+len(dataKeys), len(tokens), len(dataKeys), len(logs))
}

type column struct{ table, name, typ string }

// columns lists every column of every table in the public schema.
func (s *stack) columns(t *testing.T) []column {
	t.Helper()
	rows, err := s.pool.Query(context.Background(), `SELECT c.table_name, c.column_name, c.data_type
		FROM information_schema.columns c JOIN information_schema.tables t USING (table_schema, table_name)
		WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE' ORDER BY 1, 2`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var cols []column
	for rows.Next() {
		var c column
		if err := rows.Scan(&c.table, &c.name, &c.typ); err != nil {
			t.Fatal(err)
		}
		cols = append(cols, c)
	}
	if len(cols) < 40 {
		t.Fatalf("only %d columns", len(cols))
	}
	return cols
}

// assertAbsent fails if needle occurs in column c of any row: bytea
// columns are searched as bytes, all others as their text form.
func (s *stack) assertAbsent(t *testing.T, c column, what string, needle []byte) {
	t.Helper()
	q := fmt.Sprintf(`SELECT count(*) FROM %q WHERE position($1::bytea in convert_to(%q::text, 'UTF8')) > 0`, c.table, c.name)
	if c.typ == "bytea" {
		q = fmt.Sprintf(`SELECT count(*) FROM %q WHERE position($1::bytea in %q) > 0`, c.table, c.name)
	}
	var n int
	if err := s.pool.QueryRow(context.Background(), q, needle).Scan(&n); err != nil {
		t.Fatalf("scanning %s.%s: %v", c.table, c.name, err)
	}
	if n > 0 {
		t.Errorf("%s.%s holds %s in %d rows", c.table, c.name, what, n)
	}
}

// dataKeys unwraps every cluster's data key with KMS, as only k8sapi may:
// the plaintexts the scans look for.
func (s *stack) dataKeys(t *testing.T) [][]byte {
	t.Helper()
	ctx := context.Background()
	client := kms.NewFromConfig(testenv.AWSConfig(testenv.Moto(t)))
	// A failed founding's key is shredded already: nothing to unwrap.
	rows, err := s.pool.Query(ctx, `SELECT id, org_id, wrapped_data_key FROM kube_clusters WHERE length(wrapped_data_key) > 0`)
	if err != nil {
		t.Fatal(err)
	}
	type wrapped struct {
		id, org int64
		blob    []byte
	}
	var ws []wrapped
	for rows.Next() {
		var w wrapped
		if err := rows.Scan(&w.id, &w.org, &w.blob); err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	rows.Close()
	var keys [][]byte
	for _, w := range ws {
		out, err := client.Decrypt(ctx, &kms.DecryptInput{CiphertextBlob: w.blob, EncryptionContext: map[string]string{
			"org_id": strconv.FormatInt(w.org, 10), "cluster_id": strconv.FormatInt(w.id, 10), "purpose": "k8sapi-cluster-secrets",
		}})
		if err != nil {
			t.Fatalf("unwrapping cluster %d's data key: %v", w.id, err)
		}
		keys = append(keys, out.Plaintext)
	}
	if len(keys) < 3 {
		t.Fatalf("only %d data keys", len(keys))
	}
	return keys
}
