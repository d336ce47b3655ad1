// Package faultinjection holds tests that break k8sapi's real dependencies
// under it: a PostgreSQL server and a moto_server of the package's own
// (never the machine's shared ones), stopped and started again while
// founding and bundle fetches are in flight. It has no non-test code.
package faultinjection
