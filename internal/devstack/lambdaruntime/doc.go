// Package lambdaruntime runs functions the way the Lambda service does,
// LOCAL ONLY.
//
//   - Runner (runtime.go): one execution environment. It serves the Lambda
//     Runtime API (next, response, error, init error) on a loopback port
//     and runs the function's real bootstrap binary against it, with a
//     clean environment (Environ), one invocation in flight, the template's
//     timeout (the process is killed when it passes), and a fresh process
//     after one died or was killed.
//   - Fleet (fleet.go): a function as Lambda scales it, up to
//     MaxEnvironments Runners; a request takes an idle one or starts
//     another. Runner and Fleet are both Invokers.
//   - BuildFunctions (build.go): the host bootstrap binaries of the
//     template's functions in one `go build`.
//   - RunSchedules (schedule.go): each function with a Schedule event
//     invoked every period with EventBridge's event, one run at a time.
//   - PrefixWriter (prefix.go): the functions' output, whole lines, each
//     prefixed with its function.
//
// It imports samtemplate, proc (the function processes) and localaws (the
// region and account in ARNs and environments).
package lambdaruntime
