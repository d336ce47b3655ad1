// Package deployhook is the pre-traffic hook of every deployment
// (MigrateFunction): CodeDeploy calls it after a function's new version is
// published and before its alias takes any traffic; it applies the new
// build's migrations (dbmigrate) and reports Succeeded or Failed back, and
// only Succeeded lets the traffic move.
//
// In: CodeDeploy's hook event (a deployment id and a hook execution id) or,
// invoked by hand, any event without them. Out: the database at the build's
// latest migration, the status reported for the deployment, and the
// migration's error as the invocation's.
//
// Safe to run twice and side by side: each of the stack's functions has its
// own deployment and each runs the hook; tern's advisory lock serializes
// them and a migrated database makes every later run a no-op.
package deployhook
