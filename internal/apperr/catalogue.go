package apperr

import "fmt"

// Code is one entry of the catalogue: the machine-readable code a client
// matches on, its kind, and the message the client is told when the call
// site has no detail to add. Its fields are unexported so that a code can
// only come from the catalogue below, never from a string at a call site.
type Code struct {
	name    string
	kind    Kind
	message string
	// gatewayOnly: answered only by the local stand-in of API Gateway
	// (internal/devstack/gateway), never by a function, so the API description
	// does not list it.
	gatewayOnly bool
}

// The catalogue: every code k8sapi answers, each defined once. A new
// failure the client must tell apart gets a row here, then a place under
// its status in internal/apidocs/openapi.json.
var (
	// The request itself.
	InvalidRequest       = define("invalid_request", KindInvalid, "the request could not be read")
	InvalidJSON          = define("invalid_json", KindInvalid, "the body is not valid JSON")
	InvalidField         = define("invalid_field", KindInvalid, "a field of the body is not valid")
	InvalidHeader        = define("invalid_header", KindInvalid, "a header is not valid")
	InvalidPath          = define("invalid_path", KindInvalid, "a path parameter is not valid")
	InvalidQuery         = define("invalid_query", KindInvalid, "a query parameter is not valid")
	BodyTooLarge         = define("body_too_large", KindTooLarge, "the body is too large")
	NotFound             = define("not_found", KindNotFound, "no such route")
	MethodNotAllowed     = define("method_not_allowed", KindMethodNotAllowed, "this path does not take this method; Allow names the methods it takes")
	UnsupportedMediaType = define("unsupported_media_type", KindUnsupportedMediaType, "the body must be JSON, sent as Content-Type: application/json")

	// Who is calling.
	Unauthenticated = define("unauthenticated", KindUnauthenticated, "valid credentials are required")
	Forbidden       = define("forbidden", KindForbidden, "these credentials do not reach this resource")
	TokenScope      = define("token_scope", KindForbidden, "this token's purpose does not reach this route")
	RateLimited     = define("rate_limited", KindTooManyRequests, "too many calls of this route; retry later")

	// Dependencies.
	Internal            = define("internal", KindInternal, "internal error")
	DatabaseUnavailable = define("database_unavailable", KindUnavailable, "the database is unavailable")
	KMSUnavailable      = define("kms_unavailable", KindUnavailable, "the key service is unavailable")
	ComputeFailed       = define("compute_failed", KindBadGateway, "the compute API failed")
	StorageUnavailable  = define("storage_unavailable", KindUnavailable, "the object store is unavailable; nothing was recorded")
	// An operation that stopped part-way and that the reconciler carries
	// on: never answered as if nothing were kept.
	OperationContinues = define("operation_continues", KindUnavailable,
		"the operation stopped part-way and goes on without this request; poll it, and retry with the same Idempotency-Key")

	// A cluster's lifecycle.
	ClusterNotActive     = define("cluster_not_active", KindConflict, "the cluster is not active")
	IdempotencyKeyReused = define("idempotency_key_reused", KindConflict, "Idempotency-Key was already used with a different request body")
	FoundingInProgress   = define("founding_in_progress", KindConflict, "the cluster is still being founded")
	DeletionInProgress   = define("deletion_in_progress", KindConflict, "the cluster is being deleted; poll GET /clusters/{id}")
	ClusterNameTaken     = define("cluster_name_taken", KindConflict, "another of the org's clusters that is not deleted has this name")
	ArtifactsNotPinned   = define("artifacts_not_pinned", KindUnprocessable, "the artifact manifest pins no SHA-256 for some artifacts; nothing was created")

	// A cluster's node pools.
	NodePoolExists = define("node_pool_exists", KindConflict, "the cluster already has a node pool of this name")
	NodePoolBusy   = define("node_pool_busy", KindConflict, "the node pool's operation is still running; poll the pool and try again")
	PoolsNeedCNI   = define("pools_need_routed_cni", KindUnprocessable,
		"the cluster's pod network cannot route a worker that joins later; found a cluster with cni flannel or cilium for node pools")

	// Replacing a control-plane node.
	ReplacementInProgress = define("replacement_in_progress", KindConflict, "a control-plane node of the cluster is being replaced; poll GET /clusters/{id} and try again once it is done")
	WouldLoseQuorum       = define("would_lose_quorum", KindConflict, "replacing this node now could lose etcd's quorum; nothing was changed")

	// PATCH /clusters/{id}'s control_plane_count (docs/SCALE-CONTROL-PLANE.md).
	InvalidControlPlaneCount = define("invalid_control_plane_count", KindUnprocessable, "control_plane_count must be 1, 3 or 5; nothing was changed")
	ControlPlaneUnchanged    = define("control_plane_unchanged", KindConflict, "the control plane already has this count; nothing was changed")
	ScalingInProgress        = define("control_plane_scaling", KindConflict, "the cluster's control plane is being scaled; poll GET /clusters/{id} and try again once it is done")
	// Upgrading a cluster (docs/UPGRADES.md): each preflight gate refuses
	// with its own code, named for the gate.
	UpgradeInProgress     = define("upgrade_in_progress", KindConflict, "the cluster is being upgraded (one upgrade at a time); poll GET /clusters/{id}")
	UpgradeNoPath         = define("upgrade_no_path", KindUnprocessable, "the release table has no upgrade path from the cluster's version to the one asked for; nothing was changed")
	UpgradeNodesNotReady  = define("upgrade_nodes_not_ready", KindConflict, "gate nodes_ready: a node is not ready and reporting; nothing was changed")
	UpgradeEtcdUnhealthy  = define("upgrade_etcd_unhealthy", KindConflict, "gate etcd_healthy: an etcd member is not voting and healthy; nothing was changed")
	UpgradeVersionSkew    = define("upgrade_version_skew", KindConflict, "gate version_skew: a kubelet would be newer than an API server or more than three minors older; nothing was changed")
	UpgradeDeprecatedAPIs = define("upgrade_deprecated_apis", KindConflict, "gate deprecated_apis: an API the target removes was requested in the last day; migrate its clients, or override with allow_deprecated_apis")
	UpgradeNotPaused      = define("upgrade_not_paused", KindConflict, "the upgrade is not paused; only a paused upgrade resumes")
	UpgradePastAbort      = define("upgrade_past_abort", KindConflict, "every API server is at the new version already; the way back is a restore from the pre-upgrade snapshot (docs/RESTORE.md)")

	// POST /clusters/{id}/rotate-ca and its abort (docs/CA-ROTATION.md).
	UnknownRoots           = define("unknown_roots", KindUnprocessable, "roots names a root k8sapi does not rotate (cluster, etcd, front-proxy, service-account); nothing was changed")
	OperationInProgress    = define("operation_in_progress", KindConflict, "another operation of the cluster is running; poll GET /clusters/{id} and try again once it is done")
	NoCARotation           = define("no_ca_rotation", KindConflict, "the cluster has no CA rotation in progress")
	CARotationPastDistrust = define("ca_rotation_past_distrust", KindConflict, "the rotation distrusts the old roots already; it can no longer be turned back")

	// A node's bootstrap and renewal.
	BootstrapClosed         = define("bootstrap_closed", KindConflict, "the node's bootstrap is closed; an operator may re-open it")
	BootstrapChanged        = define("bootstrap_changed", KindConflict, "the node's bootstrap was re-opened while this fetch ran; fetch again")
	BootstrapFailed         = define("bootstrap_failed", KindConflict, "the node's bootstrap failed; it reports nothing but failed until its bootstrap is re-opened")
	PhaseRegression         = define("phase_regression", KindConflict, "the node's phase changed while this report was recorded; report again")
	PhaseNotForThisNode     = define("phase_not_for_this_node", KindForbidden, "only the cluster's initial node reports this phase")
	NodeNotReady            = define("node_not_ready", KindConflict, "only a node that finished its bootstrap renews its certificates")
	IdentityNotStored       = define("identity_not_stored", KindConflict, "k8sapi holds no certificate of this identity for this node; an operator may re-open its bootstrap")
	ProofOfPossessionFailed = define("proof_of_possession_failed", KindForbidden, "a request is not signed with the key of the node's certificate")
	RenewalConflict         = define("renewal_conflict", KindConflict, "the node's certificates changed while this renewal ran; renew again")
	CSRNotAllowed           = define("csr_not_allowed", KindForbidden, "a certificate request names something k8sapi did not record for this node")

	// etcd snapshots.
	EtcdSnapshotInProgress = define("etcd_snapshot_in_progress", KindConflict, "a snapshot of this cluster is pending; GET /clusters/{id}/etcd-snapshots shows when it is done")
	NoReadyNode            = define("no_ready_node", KindConflict, "no control-plane node of the cluster is Ready to take a snapshot")
	SnapshotNotUploaded    = define("snapshot_not_uploaded", KindUnprocessable, "no object is at the snapshot's key; upload it first")
	SnapshotSizeMismatch   = define("snapshot_size_mismatch", KindUnprocessable, "the uploaded object's size is not the size reported")
	// Founding from a snapshot (restore_from on POST /clusters).
	SnapshotNotRestorable = define("snapshot_not_restorable", KindConflict, "only an uploaded snapshot of a cluster whose keys are kept can be restored")
	RestoreIncompatible   = define("restore_incompatible", KindConflict, "the new cluster would differ from the snapshot's cluster in something the snapshot depends on")

	// A function that failed, as the local gateway tells it.
	BadGateway = defineGatewayOnly("bad_gateway", KindBadGateway, "the function failed")
	// The local stack's functions are not up yet.
	StackStarting = defineGatewayOnly("stack_starting", KindUnavailable, "the local stack is starting; retry shortly")
)

// catalogue is every Code in the order defined; define fills it.
var catalogue []Code

func define(name string, kind Kind, message string) Code {
	return register(Code{name: name, kind: kind, message: message})
}

func defineGatewayOnly(name string, kind Kind, message string) Code {
	return register(Code{name: name, kind: kind, message: message, gatewayOnly: true})
}

// register is kept out of line: inlined, each of the catalogue's codes
// would add its own append to init, and the request-path functions are
// held to 12 MiB (.ci/check-lambda-builds).
//
//go:noinline
func register(c Code) Code {
	catalogue = append(catalogue, c)
	return c
}

// Catalogue is every code, in the order defined.
func Catalogue() []Code { return append([]Code(nil), catalogue...) }

// String is the code as the client sees it, e.g. "invalid_request".
func (c Code) String() string { return c.name }

// Kind is c's kind.
func (c Code) Kind() Kind { return c.kind }

// Message is what the client is told when the call site adds no detail.
func (c Code) Message() string { return c.message }

// Documented reports whether the API description lists c: every code a
// function answers.
func (c Code) Documented() bool { return !c.gatewayOnly }

// New is the error of code c with its default message.
func (c Code) New() *Error { return &Error{Code: c, Message: c.message} }

// Wrap is New that keeps cause for the logs.
func (c Code) Wrap(cause error) *Error { return c.New().WithCause(cause) }

// Detail is the error of code c told with message in place of the default:
// for what the client needs to fix or know (a field, a state).
func (c Code) Detail(message string) *Error { return &Error{Code: c, Message: message} }

// Detailf is Detail with a formatted message.
func (c Code) Detailf(format string, args ...any) *Error {
	return c.Detail(fmt.Sprintf(format, args...))
}

// MarshalText writes c as its name, so logs and JSON show the code, not an
// empty object.
func (c Code) MarshalText() ([]byte, error) { return []byte(c.name), nil }
