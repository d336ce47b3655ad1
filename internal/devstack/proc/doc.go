// Package proc starts and stops the local stack's child processes, LOCAL
// ONLY. Every Process runs in its own process group and carries a
// parent-death signal, so Stop ends its grandchildren too and a crashed or
// killed parent leaves nothing running. Beside it: FreePort, WaitFor (poll
// until ready, failing early if the process exits), HTTPAnswers, LookPath,
// LogWriter (a child's output as debug log lines) and
// MissingDependencyError (a program the stack needs and how to install it).
//
// It imports nothing of the project.
package proc
