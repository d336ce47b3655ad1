// Package templaterules holds template.yaml to the rules of running k8sapi
// in production on AWS: a connection proxy, logs with retention, alarms,
// a throttle per route and least-privilege KMS use. It has no code, only a
// test: the template is the truth, the test says what must stay true of it.
package templaterules
