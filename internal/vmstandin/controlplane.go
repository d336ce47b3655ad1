package vmstandin

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/excloud/k8sapi/internal/bundle"
	"github.com/excloud/k8sapi/internal/etcdsnapshot"
	"github.com/excloud/k8sapi/internal/nodebootstrap"
)

// controlPlaneBundle is what a control-plane stand-in reads of its bundle:
// whether it installs the addons, and which files it was given (a
// restored cluster's founding nodes get the restore script).
type controlPlaneBundle struct {
	Initial bool              `json:"is_initial_control_plane"`
	Files   map[string]string `json:"files"`
}

// bootControlPlane fetches the bundle, fetches and checks the snapshot a
// restored cluster starts from, reports each phase, then renews its
// certificates, takes the etcd snapshots and removes the etcd members it
// is asked for until the VM is gone or the player closes.
func (p *Player) bootControlPlane(vmID int64, log *slog.Logger) error {
	var b controlPlaneBundle
	if err := p.fetchWithRetries(vmID, bundle.PathTemplate, bundle.StatusPathTemplate, &b, log); err != nil {
		return err
	}
	// As the node's bootstrap runs the restore before etcd starts: only a
	// node whose bundle brings the script.
	if _, restored := b.Files[bundle.EtcdRestoreScript]; restored {
		if err := p.fetchRestoreSnapshot(vmID); err != nil {
			p.fail(vmID, bundle.StatusPathTemplate, "restoring etcd from the cluster's snapshot", err, log)
			return err
		}
	}
	if err := p.reportPhases(vmID, bundle.StatusPathTemplate, Phases(ControlPlane, b.Initial), log); err != nil {
		return err
	}
	ids, err := controlPlaneIdentities(b.Files)
	if err != nil {
		p.fail(vmID, bundle.StatusPathTemplate, "reading its keys", err, log)
		return err
	}
	log.Info("stand-in vm reported ready; it renews its certificates and takes the etcd snapshots it is asked for",
		"renew_every", p.cfg.RenewEvery.String(), "snapshot_every", p.cfg.SnapshotEvery.String())
	return p.keepUp([]duty{p.renewal(vmID, controlPlaneRenewal, ids, log), p.snapshots(vmID, log), p.membership(vmID, log),
		p.addons(vmID, log)})
}

// fetchRestoreSnapshot downloads the snapshot vmID's cluster was restored
// from and checks its size and SHA-256 against k8sapi's answer, as
// exk8s-etcd-restore.sh does; there is no etcd to restore it into.
func (p *Player) fetchRestoreSnapshot(vmID int64) error {
	var d etcdsnapshot.Download
	if err := p.vmCall(vmID, http.MethodGet, bundle.RestorePathTemplate, nil, &d); err != nil {
		return fmt.Errorf("asking for the snapshot's download URL: %w", err)
	}
	var got bytes.Buffer
	if err := p.call(http.MethodGet, d.URL, nil, nil, &got); err != nil {
		return fmt.Errorf("downloading the snapshot: %w", err)
	}
	if sum := sha256Hex(got.Bytes()); int64(got.Len()) != d.SizeBytes || sum != d.SHA256 {
		return fmt.Errorf("the snapshot downloaded is %d bytes of SHA-256 %s, k8sapi recorded %d bytes of %s", got.Len(), sum, d.SizeBytes, d.SHA256)
	}
	return nil
}

// firstSnapshotAsks are the waits of a stand-in's first asks after ready:
// the schedule (every 10 s locally) asks for a cluster's first snapshot
// once a node is Ready, and while that one is pending an operator's
// `etcd-snapshots create` is 409; asked for three times in the first
// minute, it is taken within about half a minute of ready, out of the
// way. Three more asks an hour keep within the route's budget (36 + 3 of
// 40).
var firstSnapshotAsks = []time.Duration{15 * time.Second, 15 * time.Second, 30 * time.Second}

// snapshots is the duty of asking for a snapshot to take: as
// firstSnapshotAsks says, then every SnapshotEvery, as the node's
// snapshot timer does.
func (p *Player) snapshots(vmID int64, log *slog.Logger) duty {
	soon := make([]time.Duration, len(firstSnapshotAsks))
	for i, d := range firstSnapshotAsks {
		soon[i] = min(d, p.cfg.SnapshotEvery)
	}
	return duty{soon: soon, every: p.cfg.SnapshotEvery, do: func() error { return p.takeSnapshot(vmID, log) }}
}

// takeSnapshot asks for vmID's pending snapshot; given one, it uploads a
// few bytes that say what they are to its URL and reports their size and
// SHA-256 (or the upload's failure). A failed ask or report is logged and
// left to the next ask: the snapshot stays pending and its next ask
// brings a fresh URL.
func (p *Player) takeSnapshot(vmID int64, log *slog.Logger) error {
	var up etcdsnapshot.Upload
	err := p.vmCall(vmID, http.MethodGet, bundle.SnapshotPathTemplate, nil, &up)
	if errors.Is(err, errGone) || p.ctx.Err() != nil {
		return err
	}
	if err != nil || up.ID == 0 { // 204: nothing to take
		if err != nil {
			log.Warn("stand-in vm: asking for an etcd snapshot failed; asking again later", slog.String("error", err.Error()))
		}
		return nil
	}
	rep := p.upload(up)
	body, _ := json.Marshal(rep)
	err = p.vmCall(vmID, http.MethodPost, bundle.SnapshotPathTemplate, body, nil)
	if errors.Is(err, errGone) || p.ctx.Err() != nil {
		return err
	}
	if err != nil {
		log.Warn("stand-in vm: reporting etcd snapshot failed; it stays pending", "snapshot_id", up.ID, slog.String("error", err.Error()))
		return nil
	}
	log.Info("stand-in vm: took etcd snapshot", "snapshot_id", up.ID, "size_bytes", rep.SizeBytes, "error", rep.Error)
	return nil
}

// membershipEvery is how often a stand-in asks for etcd members to
// remove, as the node's exk8s-etcd-membership.timer does.
const membershipEvery = time.Minute

// membership is the duty of the removing member of a shrinking control
// plane: it asks which members to remove and reports each removed (there
// is no etcd to remove it from), so a shrink of stand-ins finishes.
func (p *Player) membership(vmID int64, log *slog.Logger) duty {
	return duty{every: membershipEvery, do: func() error { return p.removeMembers(vmID, log) }}
}

func (p *Player) removeMembers(vmID int64, log *slog.Logger) error {
	var rm nodebootstrap.EtcdRemovals
	err := p.vmCall(vmID, http.MethodGet, bundle.EtcdMembershipPathTemplate, nil, &rm)
	if errors.Is(err, errGone) || p.ctx.Err() != nil {
		return err
	}
	if err != nil {
		log.Warn("stand-in vm: asking for etcd members to remove failed; asking again later", slog.String("error", err.Error()))
	}
	for _, m := range rm.Remove {
		body, _ := json.Marshal(nodebootstrap.EtcdRemovalReport{Name: m.Name})
		if err := p.vmCall(vmID, http.MethodPost, bundle.EtcdMembershipPathTemplate, body, nil); err != nil {
			if errors.Is(err, errGone) || p.ctx.Err() != nil {
				return err
			}
			log.Warn("stand-in vm: reporting an etcd removal failed; reporting again later", "member", m.Name, slog.String("error", err.Error()))
			continue
		}
		log.Info("stand-in vm: removed etcd member", "member", m.Name)
	}
	return nil
}

// addons is the duty of an upgrade's addons node: it asks, as the node's
// exk8s-upgrade-addons.timer does, and reports the answered addons
// applied (there is no cluster to apply them to), so an upgrade of
// stand-ins moves on to its pools.
func (p *Player) addons(vmID int64, log *slog.Logger) duty {
	return duty{every: bundle.AddonsAskEvery, do: func() error { return p.applyAddons(vmID, log) }}
}

func (p *Player) applyAddons(vmID int64, log *slog.Logger) error {
	var a nodebootstrap.AddonsAnswer
	err := p.vmCall(vmID, http.MethodGet, bundle.AddonsPathTemplate, nil, &a)
	if errors.Is(err, errGone) || p.ctx.Err() != nil {
		return err
	}
	if err != nil || a.KubernetesVersion == "" { // 204: nothing to apply
		if err != nil {
			log.Warn("stand-in vm: asking for the addons failed; asking again later", slog.String("error", err.Error()))
		}
		return nil
	}
	body, _ := json.Marshal(nodebootstrap.AddonsReport{KubernetesVersion: a.KubernetesVersion})
	if err := p.vmCall(vmID, http.MethodPost, bundle.AddonsPathTemplate, body, nil); err != nil {
		if errors.Is(err, errGone) || p.ctx.Err() != nil {
			return err
		}
		log.Warn("stand-in vm: reporting the addons failed; reporting again later", slog.String("error", err.Error()))
		return nil
	}
	log.Info("stand-in vm: applied the addons", "kubernetes_version", a.KubernetesVersion, "manifests", len(a.Manifests))
	return nil
}

// upload PUTs the stand-in's snapshot to up's presigned URL: its report.
func (p *Player) upload(up etcdsnapshot.Upload) etcdsnapshot.Report {
	data := SnapshotBytes(up.ClusterID, up.ID)
	if err := p.call(http.MethodPut, up.UploadURL, data, nil, nil); err != nil {
		return etcdsnapshot.Report{ID: up.ID, Error: "stand-in vm: uploading the snapshot: " + err.Error()}
	}
	return etcdsnapshot.Report{ID: up.ID, SizeBytes: int64(len(data)), SHA256: sha256Hex(data)}
}

// SnapshotBytes is what a stand-in uploads as snapshot id of cluster: no
// etcd ran, so a line that says so (a restore's stand-ins download and
// check it, and restore nothing from it).
func SnapshotBytes(cluster, id int64) []byte {
	return fmt.Appendf(nil, "etcd snapshot %d of cluster %d by the local simulator's stand-in VM: not an etcd snapshot, no etcd ran\n", id, cluster)
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
