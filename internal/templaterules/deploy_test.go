package templaterules

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// served are the functions traffic reaches (routes, the schedule): every
// function but the deployment hook.
func served(c *cfnTemplate) map[string]resource {
	out := c.ofType(functionType)
	delete(out, hookID)
	return out
}

// aliasRule: routes and the schedule call an alias SAM publishes, never
// $LATEST, and any property change (not only code) makes a new version.
func aliasRule(t *testing.T, c *cfnTemplate) {
	for id, fn := range c.ofType(functionType) {
		if alias := c.prop(fn, "AutoPublishAlias"); alias != "live" {
			t.Errorf("%s: AutoPublishAlias %v, want live", id, alias)
		}
		if all := c.prop(fn, "AutoPublishAliasAllProperties"); all != true {
			t.Errorf("%s: AutoPublishAliasAllProperties %v: a changed variable would ship without a new version", id, all)
		}
	}
}

// canaryRule: each served function's alias moves by CodeDeploy, a canary by
// default, rolled back by the function's own Errors alarm, after the hook.
func canaryRule(t *testing.T, c *cfnTemplate) {
	param := c.Parameters["DeploymentType"]
	if d := fmt.Sprint(param["Default"]); !strings.HasPrefix(d, "Canary") {
		t.Errorf("parameter DeploymentType defaults to %q, want a canary", d)
	}
	for id, fn := range served(c) {
		pref := mapAt(fn.Properties, "DeploymentPreference")
		if !isRef(pref["Type"], "DeploymentType") {
			t.Errorf("%s: DeploymentPreference.Type %v, want the DeploymentType parameter", id, pref["Type"])
		}
		if !slices.ContainsFunc(listOf(pref["Alarms"]), func(a any) bool { return isRef(a, id+"ErrorsAlarm") }) {
			t.Errorf("%s: DeploymentPreference.Alarms %v lacks its Errors alarm", id, pref["Alarms"])
		}
		if hook := mapAt(pref, "Hooks")["PreTraffic"]; !isRef(hook, hookID) {
			t.Errorf("%s: PreTraffic hook %v, want %s", id, hook, hookID)
		}
		if !slices.Contains(listOf(fn.DependsOn), any(hookID)) {
			t.Errorf("%s: DependsOn %v: the hook must be the new build before this alias moves", id, fn.DependsOn)
		}
	}
}

// migrationHookRule: the hook is named so SAM's CodeDeploy role may invoke
// it, reports to CodeDeploy, logs in as the owner, and is not itself
// deployed by a canary (it is the gate of the others).
func migrationHookRule(t *testing.T, c *cfnTemplate) {
	hook, ok := c.Resources[hookID]
	if !ok {
		t.Fatalf("no %s", hookID)
	}
	if name := fmt.Sprint(mapOf(hook.Properties["FunctionName"])["Fn::Sub"]); !strings.HasPrefix(name, "CodeDeployHook_") {
		t.Errorf("%s: FunctionName %v: CodeDeploy's role invokes only CodeDeployHook_* functions", hookID, hook.Properties["FunctionName"])
	}
	if hook.Properties["DeploymentPreference"] != nil {
		t.Errorf("%s: has a DeploymentPreference; the hook gates the others", hookID)
	}
	if !strings.Contains(fmt.Sprint(hook.Properties["Policies"]), "codedeploy:PutLifecycleEventHookExecutionStatus") {
		t.Errorf("%s: may not report to CodeDeploy", hookID)
	}
	if !isRef(c.env(hook)["DB_SECRET_ARN"], "MigrationDbSecretArn") {
		t.Errorf("%s: DB_SECRET_ARN %v, want the owner's (MigrationDbSecretArn)", hookID, c.env(hook)["DB_SECRET_ARN"])
	}
	if hook.Properties["CodeUri"] != "functions/migrate" {
		t.Errorf("%s: CodeUri %v", hookID, hook.Properties["CodeUri"])
	}
}

// reconcilerFailureRule: the schedule's invocations are asynchronous, which
// Lambda retries twice by default; the reconciler's next run is the retry,
// so none, and each failure lands in a queue an alarm watches.
func reconcilerFailureRule(t *testing.T, c *cfnTemplate) {
	fn := c.Resources["ReconcilerFunction"]
	cfg := mapAt(fn.Properties, "EventInvokeConfig")
	if n, ok := cfg["MaximumRetryAttempts"].(int); !ok || n != 0 {
		t.Errorf("EventInvokeConfig.MaximumRetryAttempts %v, want 0", cfg["MaximumRetryAttempts"])
	}
	dest := mapAt(cfg, "DestinationConfig", "OnFailure")
	att, _ := mapOf(dest["Destination"])["Fn::GetAtt"].([]any)
	if len(att) != 2 || c.Resources[fmt.Sprint(att[0])].Type != "AWS::SQS::Queue" || dest["Type"] != "SQS" {
		t.Fatalf("on-failure destination %v, want a queue of this stack", dest)
	}
	queue := fmt.Sprint(att[0])
	for name, e := range mapAt(fn.Properties, "Events") {
		if n, ok := mapAt(mapOf(e), "Properties", "RetryPolicy")["MaximumRetryAttempts"].(int); !ok || n != 0 {
			t.Errorf("event %s: RetryPolicy.MaximumRetryAttempts %v, want 0", name, n)
		}
	}
	watched := false
	for _, a := range c.ofType("AWS::CloudWatch::Alarm") {
		for _, d := range listOf(a.Properties["Dimensions"]) {
			watched = watched || isGetAtt(mapOf(d)["Value"], queue, "QueueName")
		}
	}
	if !watched {
		t.Errorf("no alarm watches %s", queue)
	}
}

// kmsKeyPrincipalsRule: the account root administers the key but cannot
// use it (so no IAM policy can grant use), the optional administrators
// cannot use it either, and every use is granted to a function's role.
func kmsKeyPrincipalsRule(t *testing.T, c *cfnTemplate) {
	admins := false
	for _, st := range keyStatements(c) {
		if st["Effect"] != "Allow" {
			continue
		}
		principal := mapOf(st["Principal"])["AWS"]
		actions := fmt.Sprint(st["Action"])
		switch {
		case strings.Contains(fmt.Sprint(principal), ":root"):
			var not []string
			for _, a := range listOf(st["NotAction"]) {
				not = append(not, fmt.Sprint(a))
			}
			slices.Sort(not)
			if st["Action"] != nil || !slices.Equal(not, deniedWithout) {
				t.Errorf("%v: the account root gets %v / NotAction %v, want everything but %v", st["Sid"], st["Action"], not, deniedWithout)
			}
		case isRef(principal, "KeyAdminArns"):
			admins = true
			if usesKey(actions) {
				t.Errorf("%v: administrators may use the key: %s", st["Sid"], actions)
			}
		case usesKey(actions) && !strings.HasSuffix(fmt.Sprint(mapOf(principal)["Fn::GetAtt"]), "Role Arn]"):
			t.Errorf("%v: %v may use the key, which is not a function's role", st["Sid"], principal)
		}
	}
	if !admins {
		t.Error("the key policy names no administrators (parameter KeyAdminArns)")
	}
}

func usesKey(actions string) bool {
	for _, a := range []string{"kms:Encrypt", "kms:Decrypt", "kms:ReEncrypt", "kms:GenerateDataKey", "kms:*"} {
		if strings.Contains(actions, a) {
			return true
		}
	}
	return false
}

// customDomainRule: with ApiDomainName the stack owns the name, its
// certificate and the mapping, and the functions render that name for
// nodes; without it, BootstrapBaseUrl (a rule requires one of them).
func customDomainRule(t *testing.T, c *cfnTemplate) {
	if p, ok := c.Parameters["ApiDomainName"]; !ok || p["Default"] != "" {
		t.Fatalf("parameter ApiDomainName %v: want one, optional", p)
	}
	cert := c.ofType("AWS::CertificateManager::Certificate")["ApiCertificate"]
	if cert.Condition != "HasApiDomain" || !isRef(cert.Properties["DomainName"], "ApiDomainName") || cert.Properties["ValidationMethod"] != "DNS" {
		t.Errorf("ApiCertificate %+v: want a DNS-validated certificate of ApiDomainName under HasApiDomain", cert)
	}
	domain := c.Resources["ApiDomain"]
	conf := mapOf(listOf(domain.Properties["DomainNameConfigurations"])[0])
	if domain.Type != "AWS::ApiGatewayV2::DomainName" || !isRef(conf["CertificateArn"], "ApiCertificate") {
		t.Errorf("ApiDomain %+v: want an API Gateway domain name with ApiCertificate", domain)
	}
	mapping := c.Resources["ApiDomainMapping"]
	if !isRef(mapping.Properties["ApiId"], "HttpApi") || !isRef(mapping.Properties["DomainName"], "ApiDomain") {
		t.Errorf("ApiDomainMapping %+v: want HttpApi mapped on ApiDomain", mapping.Properties)
	}
	want := `map[Fn::If:[HasApiDomain map[Fn::Sub:https://${ApiDomainName}] map[Ref:BootstrapBaseUrl]]]`
	if got := fmt.Sprint(mapAt(c.Globals, "Environment", "Variables")["BOOTSTRAP_BASE_URL"]); got != want {
		t.Errorf("BOOTSTRAP_BASE_URL %s, want %s", got, want)
	}
	if rule := fmt.Sprint(c.Rules["OneBootstrapName"]); !strings.Contains(rule, "ApiDomainName") || !strings.Contains(rule, "BootstrapBaseUrl") {
		t.Errorf("no rule requires ApiDomainName or BootstrapBaseUrl: %s", rule)
	}
}

// backupRule: the database's continuous backups go to a vault that
// outlives the stack and refuses early deletion.
func backupRule(t *testing.T, c *cfnTemplate) {
	vault := c.Resources["DbBackupVault"]
	if vault.Type != "AWS::Backup::BackupVault" || vault.DeletionPolicy != "Retain" || vault.UpdateReplacePolicy != "Retain" {
		t.Errorf("DbBackupVault %+v: want a retained vault", vault)
	}
	if !strings.Contains(fmt.Sprint(vault.Properties["AccessPolicy"]), "backup:DeleteRecoveryPoint") {
		t.Error("DbBackupVault: recovery points can be deleted early")
	}
	rules := listOf(mapAt(c.Resources["DbBackupPlan"].Properties, "BackupPlan")["BackupPlanRule"])
	rule := mapOf(rules[0])
	if rule["EnableContinuousBackup"] != true || !isRef(mapAt(rule, "Lifecycle")["DeleteAfterDays"], "DbBackupRetentionDays") ||
		!isRef(rule["TargetBackupVault"], "DbBackupVault") {
		t.Errorf("DbBackupPlan rule %v: want continuous backup to DbBackupVault for DbBackupRetentionDays", rule)
	}
	sel := fmt.Sprint(c.Resources["DbBackupSelection"].Properties)
	for _, p := range []string{"DbClusterIdentifier", "DbInstanceIdentifier", "DbBackupPlan"} {
		if !strings.Contains(sel, p) {
			t.Errorf("DbBackupSelection does not name %s", p)
		}
	}
}
