// Package adminkubeconfig issues an operator's admin kubeconfigs of an
// org's active clusters (POST /clusters/{id}/kubeconfig, and the one a
// founding's answer carries) and lists the recorded issues
// (GET /clusters/{id}/kubeconfigs). Each issue is recorded before it is
// answered; the private key is never stored.
//
// In: the operator's principal, a cluster id, the requested lifetime. Out:
// an apitypes.IssuedKubeconfig (the list: apitypes.KubeconfigIssue), or
// an *apperr.Error.
package adminkubeconfig
