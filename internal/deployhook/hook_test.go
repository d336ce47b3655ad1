package deployhook

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/jackc/pgx/v5"

	"github.com/excloud/k8sapi/internal/config"
	"github.com/excloud/k8sapi/internal/testenv"
	"github.com/excloud/k8sapi/migrations"
)

// recorder keeps every status reported, by deployment.
type recorder struct {
	mu  sync.Mutex
	got map[string]Status
	err error
}

func (r *recorder) Report(_ context.Context, ev Event, s Status) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.got == nil {
		r.got = map[string]Status{}
	}
	r.got[ev.DeploymentID] = s
	return r.err
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// Five deployments (one per function) run the hook at once on a database
// the new build has migrations for: each reports Succeeded, the database
// ends at the build's last migration, and a run after them changes nothing.
func TestHookMigratesOnceWhateverTheRuns(t *testing.T) {
	dsn := testenv.EmptyDatabase(t, "k8sapi_hook")
	rec := &recorder{}
	h := &Hook{Migrate: migrator(dsn, config.DB{StatementTimeout: time.Minute}, nil), CodeDeploy: rec, Log: quietLog()}
	var wg sync.WaitGroup
	errs := make([]error, 5)
	for i := range errs {
		wg.Go(func() {
			errs[i] = h.Handle(t.Context(), Event{DeploymentID: "d-" + string(rune('A'+i)), LifecycleEventHookExecutionID: "x"})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if len(rec.got) != 5 {
		t.Fatalf("reported %v, want five deployments", rec.got)
	}
	for d, s := range rec.got {
		if s != Succeeded {
			t.Errorf("%s: %s", d, s)
		}
	}
	want := migrationCount(t)
	if v := schemaVersion(t, dsn); v != want {
		t.Fatalf("database at version %d, the build has %d migrations", v, want)
	}
	if err := h.Handle(t.Context(), Event{DeploymentID: "d-again"}); err != nil || rec.got["d-again"] != Succeeded {
		t.Fatalf("a second run: %v, %s", err, rec.got["d-again"])
	}
}

func migrationCount(t *testing.T) int32 {
	files, err := fs.Glob(migrations.K8sapi(), "*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("migrations: %v %v", files, err)
	}
	return int32(len(files))
}

func schemaVersion(t *testing.T, dsn string) int32 {
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var v int32
	if err := conn.QueryRow(t.Context(), `SELECT version FROM schema_version_k8sapi`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// A migration that fails stops the deployment: CodeDeploy is told Failed,
// and the invocation fails too (the hook's Errors alarm). Invoked by hand,
// with no deployment, it only fails.
func TestHookReportsAFailedMigration(t *testing.T) {
	boom := errors.New("relation already exists")
	rec := &recorder{}
	h := &Hook{Migrate: func(context.Context) error { return boom }, CodeDeploy: rec, Log: quietLog()}
	if err := h.Handle(t.Context(), Event{DeploymentID: "d-1", LifecycleEventHookExecutionID: "x"}); !errors.Is(err, boom) {
		t.Fatalf("Handle: %v, want the migration's error", err)
	}
	if rec.got["d-1"] != Failed {
		t.Fatalf("reported %v, want Failed", rec.got)
	}
	rec.got = nil
	if err := h.Handle(t.Context(), Event{}); !errors.Is(err, boom) || rec.got != nil {
		t.Fatalf("by hand: %v, reported %v", err, rec.got)
	}
	// A report that cannot be sent fails the invocation even after a good
	// migration: CodeDeploy would otherwise wait out the hook's hour.
	rec.err = errors.New("throttled")
	h.Migrate = func(context.Context) error { return nil }
	if err := h.Handle(t.Context(), Event{DeploymentID: "d-2"}); err == nil || !strings.Contains(err.Error(), "throttled") {
		t.Fatalf("a lost report: %v", err)
	}
}

// The report is CodeDeploy's JSON 1.1 call, signed with SigV4 for the
// codedeploy service in the configured region; anything but 200 is an error.
func TestCodeDeployReport(t *testing.T) {
	var gotTarget, gotAuth string
	var gotBody hookStatus
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotTarget, gotAuth = r.Header.Get("X-Amz-Target"), r.Header.Get("Authorization")
		_ = json.NewDecoder(r.Body).Decode(&gotBody)
		w.WriteHeader(status)
		_, _ = io.WriteString(w, `{"lifecycleEventHookExecutionId":"x"}`)
	}))
	defer srv.Close()
	cfg := aws.Config{Region: "ap-south-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "")}
	cd := codeDeploy{aws: cfg, client: srv.Client()}
	if err := cd.Report(t.Context(), Event{DeploymentID: "d-9", LifecycleEventHookExecutionID: "x-9"}, Succeeded); err != nil {
		t.Fatal(err)
	}
	if gotTarget != "CodeDeploy_20141006.PutLifecycleEventHookExecutionStatus" {
		t.Errorf("X-Amz-Target %q", gotTarget)
	}
	if !strings.HasPrefix(gotAuth, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/") || !strings.Contains(gotAuth, "/ap-south-1/codedeploy/aws4_request") {
		t.Errorf("Authorization %q: want SigV4 for codedeploy in ap-south-1", gotAuth)
	}
	if gotBody != (hookStatus{"d-9", "x-9", "Succeeded"}) {
		t.Errorf("body %+v", gotBody)
	}
	status = http.StatusBadRequest
	if err := cd.Report(t.Context(), Event{DeploymentID: "d-9"}, Failed); err == nil {
		t.Error("a 400 answer was taken for a report")
	}
}

// The hook's connection carries its own statement timeout (RDS Proxy's
// InitQuery would otherwise cut a migration at the functions' 10 s) and,
// with IAM auth, a token signed for the host and user it dials.
func TestHookConnection(t *testing.T) {
	token := func(_ context.Context, host string, port uint16, user string) (string, error) {
		return "token-for-" + user + "@" + host, nil
	}
	cc, err := connConfig(t.Context(), "postgres://owner@proxy.example:5432/k8sapi", config.DB{StatementTimeout: 2 * time.Minute, IAMAuth: true}, token)
	if err != nil {
		t.Fatal(err)
	}
	if cc.RuntimeParams["statement_timeout"] != "120000" || cc.Password != "token-for-owner@proxy.example" {
		t.Fatalf("statement_timeout %q, password %q", cc.RuntimeParams["statement_timeout"], cc.Password)
	}
}
