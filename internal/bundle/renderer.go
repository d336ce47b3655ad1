package bundle

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"sort"
	"strings"
	"text/template"

	"github.com/excloud/k8sapi/internal/apitypes"
	"github.com/excloud/k8sapi/internal/artifacts"
	"github.com/excloud/k8sapi/internal/clusterfacts"
	"github.com/excloud/k8sapi/internal/pki"
	"github.com/excloud/k8sapi/internal/textexec"
	"github.com/excloud/k8sapi/templates"
)

// File is one rendered file of a bundle.
type File struct {
	Path    string
	Mode    fs.FileMode
	Content string
}

// Metadata is what the bundle says about the node beside its files.
type Metadata struct {
	ClusterID             int64                `json:"cluster_id"`
	VMID                  int64                `json:"vm_id"`
	ClusterName           string               `json:"cluster_name"`
	NodeName              string               `json:"node_name"`
	ServiceIP             string               `json:"service_ip"`
	DNSServiceIP          string               `json:"dns_service_ip"`
	APIServerEndpoint     string               `json:"apiserver_endpoint"`
	ControlPlaneDNSName   string               `json:"control_plane_dns_name"`
	EtcdInitialCluster    string               `json:"etcd_initial_cluster"`
	SuggestedDNSRecords   []apitypes.DNSRecord `json:"suggested_dns_records"`
	IsInitialControlPlane bool                 `json:"is_initial_control_plane"`
}

// Bundle is one VM's rendered bundle; Files are sorted by path.
type Bundle struct {
	Metadata Metadata
	Files    []File
}

// File returns the file at path.
func (b *Bundle) File(path string) (File, bool) {
	i := sort.Search(len(b.Files), func(i int) bool { return b.Files[i].Path >= path })
	if i < len(b.Files) && b.Files[i].Path == path {
		return b.Files[i], true
	}
	return File{}, false
}

// PathTemplate is the route a VM fetches its bundle from, in API Gateway
// path syntax: internal/api routes it, founding tells the operator.
const PathTemplate = "/bootstrap/control-plane/{vm_id}"

// WorkerPathTemplate is the route a worker fetches what it needs to join
// from (no private key: its keys are born on it), and WorkerCSRPathTemplate
// the one it sends its certificate requests to.
const (
	WorkerPathTemplate    = "/bootstrap/worker/{vm_id}"
	WorkerCSRPathTemplate = WorkerPathTemplate + "/csr"
	// WorkerStatusPathTemplate is where a worker reports its phases.
	WorkerStatusPathTemplate = WorkerPathTemplate + "/status"
	// WorkerRenewPathTemplate is where a ready worker renews its
	// certificates over the keys it holds.
	WorkerRenewPathTemplate = WorkerPathTemplate + "/renew"
	// WorkerHealthPathTemplate is where a ready worker reports its health
	// (exk8s-health-report.sh).
	WorkerHealthPathTemplate = WorkerPathTemplate + "/health"
)

// Response is the JSON body of GET /bootstrap/control-plane/{vm_id}: the
// metadata fields, then every file's content and mode keyed by absolute path.
// encoding/json sorts map keys, so the output is deterministic.
type Response struct {
	Metadata
	Files     map[string]string `json:"files"`
	FileModes map[string]string `json:"file_modes"`
}

// Response returns the bundle in its wire shape.
func (b *Bundle) Response() Response {
	r := Response{Metadata: b.Metadata}
	r.Files, r.FileModes = FileMaps(b.Files)
	return r
}

// FileMaps is files in their wire shape: each file's content and its mode
// (octal, as the userdata shim reads it) by host path.
func FileMaps(files []File) (contents, modes map[string]string) {
	contents, modes = make(map[string]string, len(files)), make(map[string]string, len(files))
	for _, f := range files {
		contents[f.Path] = f.Content
		modes[f.Path] = fmt.Sprintf("%04o", f.Mode.Perm())
	}
	return contents, modes
}

// Renderer renders bundles and userdata from the embedded templates. Build it
// once per cold start; it is safe for concurrent use.
type Renderer struct {
	tmpl *template.Template
	// set executes tmpl (internal/textexec: text/template parses the
	// templates, its executor is left out of the binaries).
	set *textexec.Set
}

// funcs is the renderer's FuncMap: escapers, the shell library's data
// (shellLib, shell.go) and the check that a script reports a phase k8sapi
// knows (phase).
func funcs() template.FuncMap {
	return template.FuncMap{
		"shq":      shellQuote,
		"b64":      base64Encode,
		"json":     jsonEncode,
		"shellLib": newShellLib,
		"phase":    reportedPhase,
	}
}

// shellQuote single-quotes s for POSIX shells (and systemd EnvironmentFile).
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func base64Encode(v any) (string, error) {
	switch b := v.(type) {
	case []byte:
		return base64.StdEncoding.EncodeToString(b), nil
	case string:
		return base64.StdEncoding.EncodeToString([]byte(b)), nil
	}
	return "", fmt.Errorf("b64: cannot encode %T", v)
}

func jsonEncode(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

// NewRenderer parses every embedded template once.
func NewRenderer() (*Renderer, error) { return parseRenderer(templates.FS, templates.Founding) }

// NewBundleRenderer parses only the bundle's templates (templates.FS): it
// renders bundles and kubeconfigs, never the userdata shim, which keeps the
// shim out of the bundle function's binary (held to 12 MiB).
func NewBundleRenderer() (*Renderer, error) { return parseRenderer(templates.FS) }

// NewFoundingRenderer parses only what a founding hands out (templates.
// Founding): it renders Userdata and Kubeconfig, never a bundle, and keeps
// the node templates out of the binaries that only found clusters.
func NewFoundingRenderer() (*Renderer, error) { return parseRenderer(templates.Founding) }

func parseRenderer(fsyss ...fs.FS) (*Renderer, error) {
	fm := funcs()
	t := template.New("bundle").Funcs(fm)
	var err error
	for _, fsys := range fsyss {
		if t, err = t.ParseFS(fsys, "*"); err != nil {
			return nil, fmt.Errorf("parsing bundle templates: %w", err)
		}
	}
	return &Renderer{tmpl: t, set: textexec.New(t, fm)}, nil
}

// view is the typed data of every node template.
type view struct {
	in                 *Input
	Cluster            clusterfacts.Cluster
	Node               clusterfacts.Node
	Artifacts          artifacts.Set
	ServiceIP          string
	DNSServiceIP       string
	APIServerEndpoint  string // https://<node ipv4>:6443, the node's own apiserver
	EtcdInitialCluster string // name=https://ip:2380,... by ordinal
	EtcdServers        string // localEtcd: its own member
	IsInitial          bool
	// ControlPlane: the node is a control-plane node (etcd, the API
	// server); Worker is a worker's own settings, nil on the control plane.
	ControlPlane bool
	Worker       *workerView
	// EtcdJoin is a replacement node's way into the running etcd; nil for
	// a node that founds etcd with its peers.
	EtcdJoin *etcdJoinView
	// EtcdRestore starts a restored cluster's founding node's etcd from the
	// cluster's snapshot; nil otherwise.
	EtcdRestore *etcdRestoreView
	// EtcdClusterToken is etcd's --initial-cluster-token, which a restore
	// must give its members too: the cluster's name, new with each cluster,
	// so a restored cluster's members are never taken for the old one's.
	EtcdClusterToken string
	// CNI is the cluster's CNI as cluster.env spells it (templates read
	// fields only: internal/textexec).
	CNI string
	// Cilium: the cluster's CNI is Cilium, so helm, the chart's settings
	// and cilium-values.yaml are in the bundle. PodNetwork is the bridge
	// CNI's (this node's pod subnet, routes to its peers'), Flannel the
	// flannel CNI's; each nil under the others.
	Cilium     bool
	PodNetwork *podNetwork
	Flannel    *flannelView
	// NetworkUnit readies the node's pod network on every boot before the
	// kubelet starts (which wants it); empty under Cilium.
	NetworkUnit   string
	Checksums     []checksum
	ArtifactFiles []artifacts.File // what the prereqs script downloads, by the manifest's names
	Renewal       renewalView
	Snapshot      snapshotView
	EtcdCRL       etcdCRLView
	// EtcdMembership: the shrink's etcd removals (etcdmembership.go).
	EtcdMembership etcdMembershipView
	Taint          taintView
	// Addons: an upgrade's addons apply (addons.go).
	Addons addonsView
	Health healthView
	// Drain is the node's own drain at power-off (drain.go).
	Drain *drainView
	// ClusterAdminsGroup is the operators' group RBAC binds to
	// cluster-admin (pki.ClusterAdminsGroup).
	ClusterAdminsGroup string
	TLS                tlsView
	APIServer          apiserverView
	Images             imagesView
	KubeProxy          kubeProxyView
}

type checksum struct{ File, SHA256 string }

func newView(in *Input) (*view, *topology, error) {
	topo, err := newTopology(in.Nodes, in.SelfVMID)
	if err != nil {
		return nil, nil, err
	}
	v, err := nodeView(in.Cluster, in.Artifacts, topo)
	if err != nil {
		return nil, nil, err
	}
	v.in = in
	v.ControlPlane = true
	v.APIServerEndpoint = "https://" + topo.self.IPv4 + ":6443"
	v.EtcdInitialCluster = topo.etcdInitialCluster()
	v.EtcdServers = localEtcd
	v.IsInitial = topo.isInitial
	v.EtcdJoin = newEtcdJoinView(topo)
	v.EtcdRestore = newEtcdRestoreView(in.Cluster, topo)
	v.EtcdClusterToken = in.Cluster.Name
	v.APIServer = newAPIServerView(in)
	v.Renewal = newRenewalView(v)
	v.Snapshot = newSnapshotView()
	v.EtcdCRL = newEtcdCRLView()
	v.EtcdMembership = newEtcdMembershipView()
	v.Taint = newTaintView()
	v.Addons = newAddonsView()
	v.Health = newHealthView("health")
	v.Drain = newDrainView(v, false)
	v.ClusterAdminsGroup = pki.ClusterAdminsGroup
	return v, &topo, nil
}

// nodeView is the view of what every node of c has, whatever its role: its
// facts, the cluster's networks and the artifacts it installs.
func nodeView(c clusterfacts.Cluster, a artifacts.Set, topo topology) (*view, error) {
	svc, dns, err := clusterfacts.ServiceIPs(c.ServiceCIDR)
	if err != nil {
		return nil, err
	}
	v := &view{
		Cluster:       c,
		Node:          topo.self,
		Artifacts:     a,
		ServiceIP:     svc.String(),
		DNSServiceIP:  dns.String(),
		CNI:           string(c.CNI),
		Cilium:        c.CNI == clusterfacts.CNICilium,
		ArtifactFiles: a.Files(c.KubernetesVersion, c.CNI),
		TLS:           newTLSView(),
		Images:        newImagesView(a, c.KubernetesVersion, c.CNI),
		KubeProxy:     newKubeProxyView(c),
	}
	if err := v.setPodNetwork(c, topo); err != nil {
		return nil, err
	}
	for _, f := range slices.Sorted(maps.Keys(a.SHA256)) {
		v.Checksums = append(v.Checksums, checksum{File: f, SHA256: a.SHA256[f]})
	}
	return v, nil
}

// setPodNetwork sets what the cluster's CNI renders on the node: the
// bridge CNI's subnet and routes, or flannel's settings, and the unit that
// readies either before the kubelet.
func (v *view) setPodNetwork(c clusterfacts.Cluster, topo topology) error {
	var err error
	switch c.CNI {
	case clusterfacts.CNIBridge:
		v.PodNetwork, err = topo.podNetwork(c.PodCIDR)
		v.NetworkUnit = "exk8s-pod-network.service"
	case clusterfacts.CNIFlannel:
		v.Flannel = newFlannelView(c)
		v.NetworkUnit = v.Flannel.Unit + ".service"
	}
	return err
}

// Render renders the bundle of in.SelfVMID.
func (r *Renderer) Render(in Input) (*Bundle, error) {
	if err := in.validate(); err != nil {
		return nil, fmt.Errorf("invalid bundle input: %w", err)
	}
	v, topo, err := newView(&in)
	if err != nil {
		return nil, err
	}
	b := &Bundle{Metadata: Metadata{
		ClusterID:             in.Cluster.ID,
		VMID:                  v.Node.VMID,
		ClusterName:           in.Cluster.Name,
		NodeName:              v.Node.Name,
		ServiceIP:             v.ServiceIP,
		DNSServiceIP:          v.DNSServiceIP,
		APIServerEndpoint:     v.APIServerEndpoint,
		ControlPlaneDNSName:   in.Cluster.ControlPlaneDNSName,
		EtcdInitialCluster:    v.EtcdInitialCluster,
		SuggestedDNSRecords:   clusterfacts.ControlPlaneRecords(in.Cluster.ControlPlaneDNSName, topo.peers),
		IsInitialControlPlane: v.IsInitial,
	}}
	if b.Files, err = r.renderParts(v, parts()); err != nil {
		return nil, err
	}
	return b, nil
}

// renderParts renders every file of list's parts for v, sorted by path; a
// path two parts write is an error.
func (r *Renderer) renderParts(v *view, list []part) ([]File, error) {
	var files []File
	seen := map[string]string{}
	for _, p := range list {
		for _, spec := range p.files(v) {
			if other, dup := seen[spec.path]; dup {
				return nil, fmt.Errorf("rendering %s: %s is also written by %s", p.name, spec.path, other)
			}
			seen[spec.path] = p.name
			content, err := r.content(spec)
			if err != nil {
				return nil, fmt.Errorf("rendering %s (%s): %w", spec.path, p.name, err)
			}
			files = append(files, File{Path: spec.path, Mode: spec.mode, Content: content})
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files, nil
}

// content is spec's file: its template rendered, or its raw bytes.
func (r *Renderer) content(spec fileSpec) (string, error) {
	if spec.template == "" {
		return string(spec.raw), nil
	}
	return r.execute(spec.template, spec.data)
}

func (r *Renderer) execute(name string, data any) (string, error) {
	var buf bytes.Buffer
	if err := r.set.Execute(&buf, name, data); err != nil {
		return "", err
	}
	return buf.String(), nil
}

// UserdataInput is the data of the bootstrap-userdata.sh shim.
type UserdataInput struct {
	// BootstrapBaseURL is the public base URL VMs fetch bundles from.
	BootstrapBaseURL string
	// Worker: the VM is a pool's worker; it fetches a worker's bundle and
	// runs the worker's bootstrap.
	Worker bool
}

// Userdata renders the shim passed to each VM as userdata at founding.
func (r *Renderer) Userdata(u UserdataInput) (string, error) {
	if !isDownloadURL(u.BootstrapBaseURL) {
		return "", fmt.Errorf("rendering userdata: bootstrap base URL must be an http(s) URL, got %q", u.BootstrapBaseURL)
	}
	out, err := r.execute("bootstrap-userdata.sh", u)
	if err != nil {
		return "", fmt.Errorf("rendering userdata: %w", err)
	}
	return out, nil
}
