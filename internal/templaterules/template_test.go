package templaterules

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/excloud/k8sapi/internal/config"
	"github.com/excloud/k8sapi/internal/dbroles"
	"github.com/excloud/k8sapi/internal/envelope"
	"github.com/excloud/k8sapi/internal/testenv"
)

const functionType = "AWS::Serverless::Function"

// rules is the production shape on AWS, one rule per entry.
var rules = []struct {
	name  string
	check func(t *testing.T, c *cfnTemplate)
}{
	{"an RDS Proxy for PostgreSQL with TLS and Secrets Manager auth, IAM auth by parameter", proxyRule},
	{"the proxy's target is the database the operator names", proxyTargetRule},
	{"each function logs in to the database as its own user", dbUserRule},
	{"every function connects through the proxy with a pool that does not pin", poolRule},
	{"every function logs to its own group with retention, kept when the stack goes", functionLogsRule},
	{"the API writes JSON access logs with the request id", accessLogRule},
	{"alarms on Errors, Throttles and Duration near the timeout per function, on the API's 5xx", alarmsRule},
	{"every alarm notifies the optional SNS topic", alarmActionsRule},
	{"every route has its own throttle; VMs get more than operators", routeThrottleRule},
	{"every function has reserved concurrency", reservedConcurrencyRule},
	{"KMS use is the least each function needs", kmsLeastPrivilegeRule},
	{"KMS data key use is bound to the encryption context the code sends", kmsContextRule},
	{"the key policy itself refuses use without that encryption context", kmsKeyPolicyRule},
	{"the key policy names its administrators and users; the account cannot use the key", kmsKeyPrincipalsRule},
	{"every function is published and served through its alias", aliasRule},
	{"every served function deploys by canary, rolled back by its alarm, after the migrations hook", canaryRule},
	{"migrations run in a pre-traffic hook CodeDeploy may invoke, built before any alias moves", migrationHookRule},
	{"the reconciler never retries a run and keeps every failure", reconcilerFailureRule},
	{"an optional custom domain with its certificate; nodes get its name", customDomainRule},
	{"the database is backed up to a retained vault with point-in-time restore", backupRule},
}

// hookID is the deployment hook: the tables' owner, not a function role.
const hookID = "MigrateFunction"

// dbUser is the database user a function may rds-db:connect as.
func dbUser(id string) string {
	if id == hookID {
		return "${MigrationDbUser}"
	}
	return dbroles.Login(dbroles.Functions[id])
}

func TestTemplateRules(t *testing.T) {
	c := loadTemplate(t)
	if len(c.ofType(functionType)) == 0 {
		t.Fatal("no functions in template.yaml")
	}
	for _, r := range rules {
		t.Run(r.name, func(t *testing.T) { r.check(t, c) })
	}
}

func proxyRule(t *testing.T, c *cfnTemplate) {
	proxy := c.Resources["DbProxy"]
	if proxy.Type != "AWS::RDS::DBProxy" {
		t.Fatalf("DbProxy is %q, want AWS::RDS::DBProxy", proxy.Type)
	}
	p := proxy.Properties
	if p["EngineFamily"] != "POSTGRESQL" || p["RequireTLS"] != true {
		t.Errorf("EngineFamily %v, RequireTLS %v", p["EngineFamily"], p["RequireTLS"])
	}
	// One login per function: its own database user's secret.
	var secrets []string
	for _, entry := range listOf(p["Auth"]) {
		a := mapOf(entry)
		iam := fmt.Sprint(a["IAMAuth"])
		if a["AuthScheme"] != "SECRETS" || !strings.Contains(iam, "UseIamAuth") {
			t.Errorf("Auth %v: want SECRETS and IAMAuth under condition UseIamAuth", a)
		}
		secrets = append(secrets, fmt.Sprint(mapOf(a["SecretArn"])["Ref"]))
	}
	slices.Sort(secrets)
	if want := functionSecrets(c); !slices.Equal(secrets, want) {
		t.Errorf("the proxy logs in with %v, want each function's own secret %v", secrets, want)
	}
	if !strings.Contains(fmt.Sprint(c.Conditions["UseIamAuth"]), "DbIamAuth") {
		t.Errorf("condition UseIamAuth = %v, want it to test parameter DbIamAuth", c.Conditions["UseIamAuth"])
	}
}

// functionSecrets are the parameters naming each function's own database
// secret (its DB_SECRET_ARN), sorted.
func functionSecrets(c *cfnTemplate) []string {
	var out []string
	for _, fn := range c.ofType(functionType) {
		out = append(out, fmt.Sprint(mapOf(c.env(fn)["DB_SECRET_ARN"])["Ref"]))
	}
	slices.Sort(out)
	return out
}

// dbUserRule: each function reads its own database secret and no other,
// and with IAM auth may connect as its own user only (dbroles.Login of its
// role, the user migration 011's role is granted to; the hook, the owner).
func dbUserRule(t *testing.T, c *cfnTemplate) {
	for id, fn := range c.ofType(functionType) {
		secret := fmt.Sprint(mapOf(c.env(fn)["DB_SECRET_ARN"])["Ref"])
		if _, ok := c.Parameters[secret]; !ok {
			t.Errorf("%s: DB_SECRET_ARN %v, want a parameter of its own", id, c.env(fn)["DB_SECRET_ARN"])
		}
		policies := fmt.Sprint(fn.Properties["Policies"])
		for _, other := range functionSecrets(c) {
			if (other == secret) != strings.Contains(policies, "SecretArn:map[Ref:"+other+"]") {
				t.Errorf("%s: reads secret %s: %v, want its own only", id, other, other == secret)
			}
		}
		user := dbUser(id)
		if n := strings.Count(policies, "rds-db:connect"); n != 1 || !strings.Contains(policies, "/"+user+" ") {
			t.Errorf("%s: rds-db:connect %d times, want once, as %s", id, n, user)
		}
	}
}

func proxyTargetRule(t *testing.T, c *cfnTemplate) {
	groups := c.ofType("AWS::RDS::DBProxyTargetGroup")
	if len(groups) != 1 {
		t.Fatalf("%d proxy target groups, want 1", len(groups))
	}
	for _, g := range groups {
		if !isRef(g.Properties["DBProxyName"], "DbProxy") {
			t.Errorf("target group of %v, want DbProxy", g.Properties["DBProxyName"])
		}
		targets := fmt.Sprint(g.Properties["DBClusterIdentifiers"], g.Properties["DBInstanceIdentifiers"])
		for _, param := range []string{"DbClusterIdentifier", "DbInstanceIdentifier"} {
			if _, ok := c.Parameters[param]; !ok || !strings.Contains(targets, param) {
				t.Errorf("target group does not take parameter %s", param)
			}
		}
		if borrow, _ := mapAt(g.Properties, "ConnectionPoolConfigurationInfo")["ConnectionBorrowTimeout"].(int); borrow <= 0 || borrow >= minTimeout(c) {
			t.Errorf("ConnectionBorrowTimeout %d s: a request must give up waiting for a connection inside the shortest function timeout (%d s)", borrow, minTimeout(c))
		}
	}
}

func minTimeout(c *cfnTemplate) int {
	shortest := 0
	for _, fn := range c.ofType(functionType) {
		if s := c.timeoutSeconds(fn); shortest == 0 || s < shortest {
			shortest = s
		}
	}
	return shortest
}

// poolRule reads each function's pool variables through internal/config, so
// the template can only hold values the code accepts.
func poolRule(t *testing.T, c *cfnTemplate) {
	idle, _ := c.Resources["DbProxy"].Properties["IdleClientTimeout"].(int)
	for id, fn := range c.ofType(functionType) {
		env := c.env(fn)
		if !isGetAtt(env["DB_PROXY_ENDPOINT"], "DbProxy", "Endpoint") || !isRef(env["DB_IAM_AUTH"], "DbIamAuth") {
			t.Errorf("%s: DB_PROXY_ENDPOINT %v, DB_IAM_AUTH %v: want the proxy's endpoint and the DbIamAuth parameter", id, env["DB_PROXY_ENDPOINT"], env["DB_IAM_AUTH"])
		}
		literal := map[string]string{"DB_SECRET_ARN": "arn:aws:secretsmanager:eu-west-1:1:secret:x"}
		for _, k := range []string{"DB_MAX_CONNS", "DB_CONN_MAX_LIFETIME", "DB_STATEMENT_TIMEOUT", "DB_QUERY_EXEC_MODE"} {
			s, ok := env[k].(string)
			if !ok || s == "" {
				t.Errorf("%s: %s = %v, want a literal", id, k, env[k])
			}
			literal[k] = s
		}
		cfg, err := config.FromLookup(func(k string) (string, bool) { v, ok := literal[k]; return v, ok })
		if err != nil {
			t.Errorf("%s: %v", id, err)
			continue
		}
		pool := cfg.DB
		if pool.MaxConns > 2 {
			t.Errorf("%s: DB_MAX_CONNS %d: one request per environment needs at most 2", id, pool.MaxConns)
		}
		if pool.ConnMaxLifetime >= time.Duration(idle)*time.Second {
			t.Errorf("%s: DB_CONN_MAX_LIFETIME %s is not below the proxy's IdleClientTimeout (%d s)", id, pool.ConnMaxLifetime, idle)
		}
		if limit := time.Duration(c.timeoutSeconds(fn)) * time.Second; pool.StatementTimeout*2 > limit {
			t.Errorf("%s: DB_STATEMENT_TIMEOUT %s is not well inside the function's %s timeout", id, pool.StatementTimeout, limit)
		}
	}
}

func functionLogsRule(t *testing.T, c *cfnTemplate) {
	for id, fn := range c.ofType(functionType) {
		group, _ := mapAt(fn.Properties, "LoggingConfig")["LogGroup"].(map[string]any)
		name, _ := group["Ref"].(string)
		requireRetainedLogGroup(t, c, id, name)
	}
}

func requireRetainedLogGroup(t *testing.T, c *cfnTemplate, owner, groupID string) {
	t.Helper()
	g, ok := c.Resources[groupID]
	if !ok || g.Type != "AWS::Logs::LogGroup" {
		t.Errorf("%s: logs to %q, want a Ref to an AWS::Logs::LogGroup of this template", owner, groupID)
		return
	}
	if g.Properties["RetentionInDays"] == nil {
		t.Errorf("%s: log group %s keeps logs for ever (no RetentionInDays)", owner, groupID)
	}
	// The audit trail and the evidence of an incident outlive the stack.
	if g.DeletionPolicy != "Retain" || g.UpdateReplacePolicy != "Retain" {
		t.Errorf("%s: log group %s is deleted with the stack (DeletionPolicy %q, UpdateReplacePolicy %q)", owner, groupID, g.DeletionPolicy, g.UpdateReplacePolicy)
	}
}

func accessLogRule(t *testing.T, c *cfnTemplate) {
	settings := mapAt(c.Resources["HttpApi"].Properties, "AccessLogSettings")
	dest, _ := settings["DestinationArn"].(map[string]any)
	att, _ := dest["Fn::GetAtt"].([]any)
	if len(att) != 2 || att[1] != "Arn" {
		t.Fatalf("AccessLogSettings.DestinationArn %v, want !GetAtt <log group>.Arn", settings["DestinationArn"])
	}
	requireRetainedLogGroup(t, c, "HttpApi access logs", fmt.Sprint(att[0]))
	format, _ := settings["Format"].(string)
	var fields map[string]string
	if err := json.Unmarshal([]byte(format), &fields); err != nil {
		t.Fatalf("access log format is not a JSON object: %v", err)
	}
	if !slices.Contains(slices.Collect(maps.Values(fields)), "$context.requestId") {
		t.Errorf("access log format %s has no $context.requestId", format)
	}
}

// alarmKey names what an alarm watches: namespace, metric, dimension target.
type alarmKey struct{ namespace, metric, target string }

func alarmsRule(t *testing.T, c *cfnTemplate) {
	alarms := map[alarmKey]map[string]any{}
	for _, a := range c.ofType("AWS::CloudWatch::Alarm") {
		p := a.Properties
		dims, _ := p["Dimensions"].([]any)
		for _, d := range dims {
			dim, _ := d.(map[string]any)
			ref, _ := mapAt(dim, "Value")["Ref"].(string)
			alarms[alarmKey{fmt.Sprint(p["Namespace"]), fmt.Sprint(p["MetricName"]), ref}] = p
		}
	}
	for id, fn := range c.ofType(functionType) {
		for _, metric := range []string{"Errors", "Throttles", "Duration"} {
			if _, ok := alarms[alarmKey{"AWS/Lambda", metric, id}]; !ok {
				t.Errorf("%s: no alarm on %s", id, metric)
			}
		}
		d := alarms[alarmKey{"AWS/Lambda", "Duration", id}]
		limit := float64(c.timeoutSeconds(fn) * 1000)
		if th, _ := d["Threshold"].(int); float64(th) < 0.5*limit || float64(th) > 0.9*limit {
			t.Errorf("%s: Duration alarm at %d ms, want 50-90%% of the %v ms timeout", id, th, limit)
		}
	}
	if _, ok := alarms[alarmKey{"AWS/ApiGateway", "5xx", "HttpApi"}]; !ok {
		t.Error("no alarm on the API's 5xx")
	}
}

func alarmActionsRule(t *testing.T, c *cfnTemplate) {
	if p, ok := c.Parameters["AlarmTopicArn"]; !ok || p["Default"] != "" {
		t.Fatalf("parameter AlarmTopicArn %v: want one, optional (Default \"\")", p)
	}
	want := `map[Fn::If:[HasAlarmTopic [map[Ref:AlarmTopicArn]] map[Ref:AWS::NoValue]]]`
	for id, a := range c.ofType("AWS::CloudWatch::Alarm") {
		if got := fmt.Sprint(a.Properties["AlarmActions"]); got != want {
			t.Errorf("%s: AlarmActions %s, want %s", id, got, want)
		}
	}
}

// routeThrottleRule: the fleet arithmetic is in docs/RUNBOOK.md ("Throttles per route"); the
// floor here is 10,000 VMs in an hour at ten times the average rate.
func routeThrottleRule(t *testing.T, c *cfnTemplate) {
	settings := mapAt(c.Resources["HttpApi"].Properties, "RouteSettings")
	for id, fn := range c.ofType(functionType) {
		for name, e := range mapAt(fn.Properties, "Events") {
			if e.(map[string]any)["Type"] != "HttpApi" {
				continue // a Schedule event has no route to throttle
			}
			p := mapAt(e.(map[string]any), "Properties")
			key := strings.ToUpper(fmt.Sprint(p["Method"])) + " " + fmt.Sprint(p["Path"])
			s := mapAt(settings, key)
			rate, _ := s["ThrottlingRateLimit"].(int)
			burst, _ := s["ThrottlingBurstLimit"].(int)
			if rate <= 0 || burst < rate {
				t.Errorf("%s.%s: route %q has no throttle of its own (rate %d, burst %d)", id, name, key, rate, burst)
			}
		}
	}
	const fleetFloor = 10_000 * 10 / 3600 // fetches per second
	bundle, _ := mapAt(settings, "GET /bootstrap/control-plane/{vm_id}")["ThrottlingRateLimit"].(int)
	if bundle < fleetFloor {
		t.Errorf("bundle route rate %d/s, below the fleet floor %d/s", bundle, fleetFloor)
	}
	for key, s := range settings {
		if !strings.Contains(key, "/bootstrap/") {
			if rate, _ := mapAt(s.(map[string]any))["ThrottlingRateLimit"].(int); rate >= bundle {
				t.Errorf("%s: rate %d/s is not below the VMs' bundle route (%d/s)", key, rate, bundle)
			}
		}
	}
}

// reservedConcurrencyRule: each function is bounded (its proxy
// connections, its share of the account) and guaranteed its share; the
// account keeps the 100 unreserved executions Lambda requires.
func reservedConcurrencyRule(t *testing.T, c *cfnTemplate) {
	total := 0
	for id, fn := range c.ofType(functionType) {
		n, _ := fn.Properties["ReservedConcurrentExecutions"].(int)
		if n <= 0 {
			t.Errorf("%s: no ReservedConcurrentExecutions", id)
		}
		total += n
	}
	if total > 900 {
		t.Errorf("%d executions reserved: a default account (1,000) must keep 100 unreserved", total)
	}
}

// kmsGrant is one key policy statement's KMS actions and its condition.
type kmsGrant struct {
	actions   []string
	condition map[string]any
}

// keyStatements are ClusterKey's policy statements, a conditional one
// (!If [cond, statement, AWS::NoValue]) as its statement.
func keyStatements(c *cfnTemplate) []map[string]any {
	var out []map[string]any
	for _, st := range listOf(mapAt(c.Resources["ClusterKey"].Properties, "KeyPolicy")["Statement"]) {
		if branches, ok := mapOf(st)["Fn::If"].([]any); ok && len(branches) == 3 {
			st = branches[1]
		}
		out = append(out, mapOf(st))
	}
	return out
}

// kmsGrants are the key policy's Allow statements naming the function's
// own role (SAM's <LogicalId>Role): the key names its users.
func kmsGrants(c *cfnTemplate, id string) []kmsGrant {
	var out []kmsGrant
	for _, st := range keyStatements(c) {
		if st["Effect"] != "Allow" || !isGetAtt(mapOf(st["Principal"])["AWS"], id+"Role", "Arn") {
			continue
		}
		var actions []string
		for _, a := range listOf(st["Action"]) {
			actions = append(actions, fmt.Sprint(a))
		}
		out = append(out, kmsGrant{actions: actions, condition: mapOf(st["Condition"])})
	}
	return out
}

func mapOf(v any) map[string]any { m, _ := v.(map[string]any); return m }

func listOf(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	return []any{v}
}

// wantKMSActions is each function's whole KMS use.
var wantKMSActions = map[string][]string{
	"CreateClusterFunction": {"kms:Decrypt", "kms:GenerateDataKey"},
	"ClustersFunction":      nil,
	"GetBundleFunction":     {"kms:Decrypt"},
	"HealthFunction":        {"kms:DescribeKey"},
	"ReconcilerFunction":    {"kms:Decrypt"},
	hookID:                  nil,
}

func kmsLeastPrivilegeRule(t *testing.T, c *cfnTemplate) {
	for id, fn := range c.ofType(functionType) {
		want, known := wantKMSActions[id]
		if !known {
			t.Errorf("%s: no KMS rule for this function; add it to wantKMSActions", id)
			continue
		}
		var got []string
		for _, g := range kmsGrants(c, id) {
			got = append(got, g.actions...)
		}
		// The role holds no KMS right of its own: the key policy is the one
		// list of who uses the key.
		if p := fmt.Sprint(fn.Properties["Policies"]); strings.Contains(p, "kms:") {
			t.Errorf("%s: its role grants KMS actions; grant them in ClusterKey's policy", id)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s: KMS actions %v, want %v", id, got, want)
		}
	}
	if env := c.env(c.Resources["ClustersFunction"]); env["KMS_KEY_ID"] != "" {
		t.Errorf("ClustersFunction is given KMS_KEY_ID %v; it uses no key", env["KMS_KEY_ID"])
	}
}

// kmsContextRule learns the encryption context from internal/envelope itself
// (a data key made through real KMS, moto, with the request recorded) and
// requires every GenerateDataKey or Decrypt grant to be conditioned on
// exactly those keys and that purpose.
func kmsContextRule(t *testing.T, c *cfnTemplate) {
	sent := encryptionContextSent(t)
	keys := slices.Sorted(maps.Keys(sent))
	for id := range c.ofType(functionType) {
		for _, g := range kmsGrants(c, id) {
			if !slices.ContainsFunc(g.actions, func(a string) bool { return a == "kms:GenerateDataKey" || a == "kms:Decrypt" }) {
				continue
			}
			var granted []string
			for _, k := range listOf(mapAt(g.condition, "ForAllValues:StringEquals")["kms:EncryptionContextKeys"]) {
				granted = append(granted, fmt.Sprint(k))
			}
			slices.Sort(granted)
			if !slices.Equal(granted, keys) {
				t.Errorf("%s: kms:EncryptionContextKeys %v, the code sends %v", id, granted, keys)
			}
			for k, v := range sent {
				eq := mapAt(g.condition, "StringEquals")["kms:EncryptionContext:"+k]
				null := mapAt(g.condition, "Null")["kms:EncryptionContext:"+k]
				if eq == nil && null != "false" {
					t.Errorf("%s: kms:EncryptionContext:%s is neither required nor pinned", id, k)
				}
				if eq != nil && eq != v && !strings.HasSuffix(k, "_id") {
					t.Errorf("%s: kms:EncryptionContext:%s must equal %q, the template says %v", id, k, v, eq)
				}
			}
		}
	}
}

// deniedWithout are the actions the key policy must refuse without the
// encryption context: every use that takes one.
var deniedWithout = []string{"kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey*", "kms:ReEncrypt*"}

// kmsKeyPolicyRule requires, for each key of the context the code sends, a
// Deny in the key policy for everyone (but the account root) when that key
// is missing or, for the purpose, different: a Deny per key, because one
// statement denies only when all its conditions hold.
func kmsKeyPolicyRule(t *testing.T, c *cfnTemplate) {
	denies := map[string]any{} // context key → the value a Deny requires of it
	for _, st := range keyStatements(c) {
		for k, v := range contextDeny(t, st) {
			denies[k] = v
		}
	}
	for k, v := range encryptionContextSent(t) {
		want := any("?*")
		if !strings.HasSuffix(k, "_id") {
			want = v
		}
		if denies[k] != want {
			t.Errorf("the key policy does not refuse use without kms:EncryptionContext:%s = %v (has %v)", k, want, denies[k])
		}
	}
}

// contextDeny is what a Deny statement of the key policy requires of the
// encryption context, if it is such a statement: for everyone, covering
// every use that takes a context, exempting the account root only.
func contextDeny(t *testing.T, st map[string]any) map[string]any {
	var actions []string
	for _, a := range listOf(st["Action"]) {
		actions = append(actions, fmt.Sprint(a))
	}
	slices.Sort(actions)
	if st["Effect"] != "Deny" {
		return nil
	}
	cond := mapOf(st["Condition"])
	if st["Principal"] != "*" || !slices.Equal(actions, deniedWithout) ||
		!strings.Contains(fmt.Sprint(mapAt(cond, "ArnNotEquals")["aws:PrincipalArn"]), ":iam::${AWS::AccountId}:root") {
		t.Errorf("key policy Deny %v: want Principal *, actions %v, only the account root exempt", st["Sid"], deniedWithout)
	}
	out := map[string]any{}
	for _, op := range []string{"StringNotLike", "StringNotEquals"} {
		for k, v := range mapAt(cond, op) {
			out[strings.TrimPrefix(k, "kms:EncryptionContext:")] = v
		}
	}
	return out
}

// recordingKMS passes calls to real KMS and keeps the last context sent.
type recordingKMS struct {
	*kms.Client
	context map[string]string
}

func (r *recordingKMS) GenerateDataKey(ctx context.Context, in *kms.GenerateDataKeyInput, opts ...func(*kms.Options)) (*kms.GenerateDataKeyOutput, error) {
	r.context = in.EncryptionContext
	return r.Client.GenerateDataKey(ctx, in, opts...)
}

func encryptionContextSent(t *testing.T) map[string]string {
	t.Helper()
	client, keyID := testenv.KMSKey(t)
	rec := &recordingKMS{Client: client}
	if _, err := envelope.New(rec, keyID, nil).NewDataKey(t.Context(), envelope.Scope{OrgID: 7, ClusterID: 42}); err != nil {
		t.Fatal(err)
	}
	if len(rec.context) == 0 {
		t.Fatal("envelope sent no encryption context")
	}
	return rec.context
}
