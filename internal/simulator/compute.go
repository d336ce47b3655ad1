package simulator

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"regexp"
	"strconv"
	"strings"

	"github.com/excloud/k8sapi/internal/compute"
	"github.com/excloud/k8sapi/internal/platformhttp"
	"github.com/jackc/pgx/v5"
)

// PublicIPv4Pool is where simulated public addresses come from: TEST-NET-3
// (RFC 5737), never routed, so nothing can mistake them for real ones.
const PublicIPv4Pool = "203.0.113.0/24"

// publicPoolLockKey serializes public address allocation across subnets
// (subnet row locks serialize only within one subnet). Arbitrary constant.
const publicPoolLockKey int64 = 0x45_78_63_53_69_6d // "ExcSim"

type securityGroup struct {
	orgID       int64
	name        string
	description string
	rules       map[int64]compute.Rule
}

func pathID(w http.ResponseWriter, r *http.Request, name string) (int64, bool) {
	id, err := strconv.ParseInt(r.PathValue(name), 10, 64)
	if err != nil || id <= 0 {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("%s %q is not a positive integer", name, r.PathValue(name)))
		return 0, false
	}
	return id, true
}

func (s *Simulator) listSubnets(w http.ResponseWriter, r *http.Request, _ int64) {
	rows, _ := s.db.Query(r.Context(), `SELECT id, zone_id, cidr_ipv4, cidr_ipv6 FROM subnets ORDER BY id`)
	subnets, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (compute.Subnet, error) {
		var sn compute.Subnet
		return sn, row.Scan(&sn.ID, &sn.ZoneID, &sn.CIDRv4, &sn.CIDRv6)
	})
	if err != nil {
		s.internal(w, r, "listing subnets", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"subnets": subnets})
}

func (s *Simulator) getSubnet(w http.ResponseWriter, r *http.Request, _ int64) {
	id, ok := pathID(w, r, "id")
	if !ok {
		return
	}
	var sn compute.Subnet
	err := s.db.QueryRow(r.Context(),
		`SELECT id, zone_id, cidr_ipv4, cidr_ipv6 FROM subnets WHERE id = $1`, id).
		Scan(&sn.ID, &sn.ZoneID, &sn.CIDRv4, &sn.CIDRv6)
	if errors.Is(err, pgx.ErrNoRows) {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("subnet %d not found", id))
		return
	}
	if err != nil {
		s.internal(w, r, "reading subnet", err)
		return
	}
	writeJSON(w, http.StatusOK, sn)
}

func (s *Simulator) createSecurityGroup(w http.ResponseWriter, r *http.Request, orgID int64) {
	var sg compute.SecurityGroup
	if !decode(w, r, &sg) {
		return
	}
	if strings.TrimSpace(sg.Name) == "" {
		writeError(w, http.StatusBadRequest, "invalid_field", "name: required")
		return
	}
	id := s.createOnce(orgID, r, func() int64 {
		s.lastID++
		s.groups[s.lastID] = &securityGroup{orgID: orgID, name: sg.Name, description: sg.Description, rules: map[int64]compute.Rule{}}
		return s.lastID
	})
	writeJSON(w, http.StatusCreated, compute.Created{ID: id})
}

// createOnce runs create (under s.mu) unless the request's idempotency
// token already made an object, whose id it returns instead: a repeat of a
// token never makes a second object, even after the first was deleted.
func (s *Simulator) createOnce(orgID int64, r *http.Request, create func() int64) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := orgToken{orgID, r.Header.Get(platformhttp.IdempotencyKeyHeader)}
	if id, ok := s.tokens[key]; ok && key.token != "" {
		return id
	}
	id := create()
	if key.token != "" {
		s.tokens[key] = id
	}
	return id
}

func (s *Simulator) deleteSecurityGroup(w http.ResponseWriter, r *http.Request, orgID int64) {
	id, ok := pathID(w, r, "id")
	if !ok {
		return
	}
	s.mu.Lock()
	g := s.groups[id]
	found := g != nil && g.orgID == orgID // another org's group is as good as absent
	if found {
		delete(s.groups, id)
	}
	s.mu.Unlock()
	if !found {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("security group %d not found", id))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

var (
	protocols = map[string]bool{"ANY": true, "TCPv4": true, "UDPv4": true, "ICMPv4": true, "TCPv6": true, "UDPv6": true, "ICMPv6": true}
	portRange = regexp.MustCompile(`^([0-9]{1,5})(?:-([0-9]{1,5}))?$`)
)

// ruleProblem returns what is wrong with r's fields ("" if nothing), naming
// the field as the real API would.
func ruleProblem(r compute.Rule) string {
	if !protocols[r.Protocol] {
		return fmt.Sprintf("protocol: %q is not one of ANY, TCPv4, UDPv4, ICMPv4, TCPv6, UDPv6, ICMPv6", r.Protocol)
	}
	if r.PortRange != compute.PortRangeAny {
		m := portRange.FindStringSubmatch(r.PortRange)
		if m == nil {
			return fmt.Sprintf("port_range: %q is not ANY, a port or lo-hi", r.PortRange)
		}
		lo, _ := strconv.Atoi(m[1])
		hi := lo
		if m[2] != "" {
			hi, _ = strconv.Atoi(m[2])
		}
		if lo < 1 || hi > 65535 || lo > hi {
			return fmt.Sprintf("port_range: %q is outside 1-65535 or reversed", r.PortRange)
		}
	}
	if _, err := netip.ParsePrefix(r.CIDR); err != nil {
		return fmt.Sprintf("cidr: %q is not a CIDR", r.CIDR)
	}
	return ""
}

func (s *Simulator) createRule(w http.ResponseWriter, r *http.Request, orgID int64) {
	var rule compute.Rule
	if !decode(w, r, &rule) {
		return
	}
	if p := ruleProblem(rule); p != "" {
		writeError(w, http.StatusBadRequest, "invalid_field", p)
		return
	}
	id := s.createOnce(orgID, r, func() int64 {
		g := s.groups[rule.SecurityGroupID]
		if g == nil || g.orgID != orgID {
			return 0
		}
		s.lastID++
		g.rules[s.lastID] = rule
		return s.lastID
	})
	if id == 0 {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("security_group_id: security group %d not found", rule.SecurityGroupID))
		return
	}
	writeJSON(w, http.StatusCreated, compute.Created{ID: id})
}

// instanceProblem returns what is wrong with in's fields, or "".
func (s *Simulator) instanceProblem(in compute.InstanceRequest, orgID int64) string {
	switch {
	case strings.TrimSpace(in.Name) == "":
		return "name: required"
	case in.SubnetID <= 0:
		return "subnet_id: must be positive"
	case in.ImageID <= 0:
		return "image_id: must be positive"
	case strings.TrimSpace(in.InstanceType) == "":
		return "instance_type: required"
	case in.RootVolume != nil && in.RootVolume.SizeGiB < 0:
		return "root_volume.size_gib: must not be negative"
	}
	if p := catalogProblem(in); p != "" {
		return p
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range in.SecurityGroupIDs {
		// Groups the simulator did not create (made "elsewhere" on the real
		// platform) are accepted; a group of another org is not.
		if g := s.groups[id]; id <= 0 || (g != nil && g.orgID != orgID) {
			return fmt.Sprintf("security_group_ids: security group %d not found", id)
		}
	}
	return ""
}

func (s *Simulator) createInstance(w http.ResponseWriter, r *http.Request, orgID int64) {
	if s.instanceCreateShouldFail() {
		writeError(w, http.StatusInternalServerError, "injected_fault", "simulated instance create failure (fail_instance_create_on)")
		return
	}
	var in compute.InstanceRequest
	if !decode(w, r, &in) {
		return
	}
	if p := s.instanceProblem(in, orgID); p != "" {
		writeError(w, http.StatusBadRequest, "invalid_field", p)
		return
	}
	id, status, msg, err := s.insertInstance(r.Context(), orgID, in, r.Header.Get(platformhttp.IdempotencyKeyHeader))
	if err == nil && status == 0 && s.answerShouldBeLost() {
		dropConnection()
		return
	}
	if err != nil {
		s.internal(w, r, "creating instance", err)
		return
	}
	if status != 0 {
		code := "invalid_field"
		if status == http.StatusConflict {
			code = "address_exhausted"
		}
		writeError(w, status, code, msg)
		return
	}
	writeJSON(w, http.StatusCreated, compute.Created{ID: id})
}

// insertInstance records the VM and its interface in one transaction. The
// subnet row is locked FOR UPDATE so concurrent creates in one subnet take
// turns choosing addresses and never pick the same one; public addresses,
// shared by all subnets, are guarded by an advisory lock taken after it
// (always in that order, so creates cannot deadlock each other).
// A refusal is returned as (status, message) with a nil error.
func (s *Simulator) insertInstance(ctx context.Context, orgID int64, in compute.InstanceRequest, token string) (id int64, status int, msg string, err error) {
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return 0, 0, "", err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
	if id, found, err := replayToken(ctx, tx, orgID, token); err != nil || found {
		return id, 0, "", err
	}
	addrs, refused, err := placeInSubnet(ctx, tx, &in)
	if err != nil || refused != nil {
		return 0, refused.statusOf(), refused.String(), err
	}
	if in.AllocatePublicIPv4 {
		if addrs.public, refused, err = allocatePublicIPv4(ctx, tx); err != nil || refused != nil {
			return 0, refused.statusOf(), refused.String(), err
		}
	}
	if id, err = s.insertVM(ctx, tx, orgID, in, token, addrs); err != nil {
		return 0, 0, "", err
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, 0, "", fmt.Errorf("committing vm: %w", err)
	}
	s.created(CreatedVM{ID: id, Role: in.Tags["role"]})
	return id, 0, "", nil
}

// refusal is a create the compute API answers with a 4xx.
type refusal struct {
	status int
	msg    string
}

func (r *refusal) statusOf() int {
	if r == nil {
		return 0
	}
	return r.status
}

func (r *refusal) String() string {
	if r == nil {
		return ""
	}
	return r.msg
}

// replayToken: creates of one idempotency token take turns, and the first
// one's VM is the answer to every later one.
func replayToken(ctx context.Context, tx pgx.Tx, orgID int64, token string) (id int64, found bool, err error) {
	if token == "" {
		return 0, false, nil
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext($1))`, token); err != nil {
		return 0, false, fmt.Errorf("locking idempotency token: %w", err)
	}
	err = tx.QueryRow(ctx, `SELECT id FROM vms WHERE org_id = $1 AND idempotency_token = $2`, orgID, token).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("looking up idempotency token: %w", err)
	}
	return id, true, nil
}

// vmAddresses are the addresses a new VM's primary interface gets.
type vmAddresses struct {
	ipv4, ipv6, public string
}

// placeInSubnet checks the request's subnet and zone (filling in the zone)
// and takes the subnet's next free addresses, the subnet row locked.
func placeInSubnet(ctx context.Context, tx pgx.Tx, in *compute.InstanceRequest) (vmAddresses, *refusal, error) {
	var zoneID int64
	var cidr4, cidr6 string
	err := tx.QueryRow(ctx, `SELECT zone_id, cidr_ipv4, cidr_ipv6 FROM subnets WHERE id = $1 FOR UPDATE`, in.SubnetID).
		Scan(&zoneID, &cidr4, &cidr6)
	if errors.Is(err, pgx.ErrNoRows) {
		return vmAddresses{}, &refusal{http.StatusBadRequest, fmt.Sprintf("subnet_id: subnet %d not found", in.SubnetID)}, nil
	}
	if err != nil {
		return vmAddresses{}, nil, fmt.Errorf("locking subnet %d: %w", in.SubnetID, err)
	}
	if in.ZoneID == 0 {
		in.ZoneID = zoneID
	} else if in.ZoneID != zoneID {
		return vmAddresses{}, &refusal{http.StatusBadRequest, fmt.Sprintf("zone_id: subnet %d is in zone %d, not %d", in.SubnetID, zoneID, in.ZoneID)}, nil
	}
	used4, used6, err := usedAddresses(ctx, tx,
		`SELECT i.ipv4, i.ipv6 FROM interfaces i JOIN vms v ON v.id = i.vm_id
		 WHERE v.subnet_id = $1 AND v.deleted_at IS NULL`, in.SubnetID)
	if err != nil {
		return vmAddresses{}, nil, fmt.Errorf("reading addresses in subnet %d: %w", in.SubnetID, err)
	}
	full := func(err error) *refusal {
		return &refusal{http.StatusConflict, fmt.Sprintf("subnet_id: subnet %d: %v", in.SubnetID, err)}
	}
	ipv4, err := nextFree(cidr4, used4)
	if err != nil {
		return vmAddresses{}, full(err), nil
	}
	addrs := vmAddresses{ipv4: ipv4.String()}
	if cidr6 != "" {
		a, err := nextFree(cidr6, used6)
		if err != nil {
			return vmAddresses{}, full(err), nil
		}
		addrs.ipv6 = a.String()
	}
	return addrs, nil, nil
}

// allocatePublicIPv4 takes the pool's next free public address, the pool
// locked for the rest of the transaction.
func allocatePublicIPv4(ctx context.Context, tx pgx.Tx) (string, *refusal, error) {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, publicPoolLockKey); err != nil {
		return "", nil, fmt.Errorf("locking the public address pool: %w", err)
	}
	usedPublic, _, err := usedAddresses(ctx, tx, `SELECT public_ipv4, '' FROM interfaces WHERE public_ipv4 <> ''`)
	if err != nil {
		return "", nil, fmt.Errorf("reading public addresses: %w", err)
	}
	a, err := nextFree(PublicIPv4Pool, usedPublic)
	if err != nil {
		return "", &refusal{http.StatusConflict, "allocate_public_ipv4: " + err.Error()}, nil
	}
	return a.String(), nil, nil
}

// insertVM writes the VM (running at once) and its primary interface.
func (s *Simulator) insertVM(ctx context.Context, tx pgx.Tx, orgID int64, in compute.InstanceRequest, token string, addrs vmAddresses) (id int64, err error) {
	rootGiB := 0
	if in.RootVolume != nil {
		rootGiB = in.RootVolume.SizeGiB
	}
	sgIDs := in.SecurityGroupIDs
	if sgIDs == nil {
		sgIDs = []int64{}
	}
	err = tx.QueryRow(ctx,
		`INSERT INTO vms (org_id, name, zone_id, subnet_id, image_id, instance_type, role, userdata,
		                  allocate_public_ipv4, ssh_pubkey, root_volume_size_gib, security_group_ids, state, created_at,
		                  idempotency_token)
		 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, 'running', $13, nullif($14, '')) RETURNING id`,
		orgID, in.Name, in.ZoneID, in.SubnetID, in.ImageID, in.InstanceType, in.Tags["role"], in.Userdata,
		in.AllocatePublicIPv4, in.SSHPubkey, rootGiB, sgIDs, s.now(), token).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("inserting vm: %w", err)
	}
	if _, err := tx.Exec(ctx,
		`INSERT INTO interfaces (vm_id, ipv4, ipv6, public_ipv4, is_primary) VALUES ($1, $2, $3, $4, true)`,
		id, addrs.ipv4, addrs.ipv6, addrs.public); err != nil {
		return 0, fmt.Errorf("inserting interface of vm %d: %w", id, err)
	}
	return id, nil
}

// usedAddresses runs query (two text columns) and returns the addresses in
// each column as sets; empty and unparsable values are skipped.
func usedAddresses(ctx context.Context, tx pgx.Tx, query string, args ...any) (col1, col2 map[netip.Addr]bool, err error) {
	rows, err := tx.Query(ctx, query, args...)
	if err != nil {
		return nil, nil, err
	}
	col1, col2 = map[netip.Addr]bool{}, map[netip.Addr]bool{}
	var a, b string
	_, err = pgx.ForEachRow(rows, []any{&a, &b}, func() error {
		if x, err := netip.ParseAddr(a); err == nil {
			col1[x] = true
		}
		if x, err := netip.ParseAddr(b); err == nil {
			col2[x] = true
		}
		return nil
	})
	return col1, col2, err
}

// nextFree returns the lowest address of cidr not in used, skipping the
// network address, the first host (the gateway) and the last address
// (IPv4 broadcast; skipped for IPv6 too, harmlessly).
func nextFree(cidr string, used map[netip.Addr]bool) (netip.Addr, error) {
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("bad CIDR %q: %w", cidr, err)
	}
	p = p.Masked()
	if p.Addr().BitLen()-p.Bits() < 2 {
		return netip.Addr{}, fmt.Errorf("CIDR %s has no room for hosts", p)
	}
	for a := p.Addr().Next().Next(); p.Contains(a); a = a.Next() {
		if !p.Contains(a.Next()) { // the last address
			break
		}
		if !used[a] {
			return a, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("no free address in %s", p)
}

func (s *Simulator) getInstance(w http.ResponseWriter, r *http.Request, orgID int64) {
	id, ok := pathID(w, r, "id")
	if !ok {
		return
	}
	var info compute.InstanceInfo
	err := s.db.QueryRow(r.Context(),
		`SELECT v.id, v.name, v.state, coalesce(i.ipv4, ''), coalesce(i.ipv6, ''), coalesce(i.public_ipv4, '')
		 FROM vms v LEFT JOIN interfaces i ON i.vm_id = v.id AND i.is_primary
		 WHERE v.id = $1 AND v.org_id = $2 AND v.deleted_at IS NULL`, id, orgID).
		Scan(&info.ID, &info.Name, &info.State, &info.IPv4, &info.IPv6, &info.PublicIPv4)
	if err == nil && s.addressesPending(id) {
		info.IPv4, info.IPv6, info.PublicIPv4 = "", "", "" // the interface is not attached yet
	}
	if errors.Is(err, pgx.ErrNoRows) { // absent, deleted, or another org's: the same 404
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("instance %d not found", id))
		return
	}
	if err != nil {
		s.internal(w, r, "reading instance", err)
		return
	}
	writeJSON(w, http.StatusOK, info)
}

func (s *Simulator) deleteInstance(w http.ResponseWriter, r *http.Request, orgID int64) {
	id, ok := pathID(w, r, "id")
	if !ok {
		return
	}
	if s.instanceDeleteShouldFail() {
		writeError(w, http.StatusInternalServerError, "injected_fault", "simulated instance delete failure (fail_instance_delete)")
		return
	}
	found, err := s.markDeleted(r.Context(), id, orgID)
	if err != nil {
		s.internal(w, r, "deleting instance", err)
		return
	}
	if !found {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("instance %d not found", id))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// markDeleted retires VM id of orgID: the row stays (deleted_at, state
// 'deleted') as the platform keeps history, while its addresses are freed
// and its IMDS sessions end with it.
func (s *Simulator) markDeleted(ctx context.Context, id, orgID int64) (found bool, err error) {
	err = pgx.BeginFunc(ctx, s.db, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx,
			`UPDATE vms SET state = 'deleted', deleted_at = $3 WHERE id = $1 AND org_id = $2 AND deleted_at IS NULL`,
			id, orgID, s.now())
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		found = true
		if _, err := tx.Exec(ctx, `DELETE FROM interfaces WHERE vm_id = $1`, id); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM imds_tokens WHERE vm_id = $1`, id)
		return err
	})
	return found, err
}

// LiveInstance is a VM as GET /_sim/instances lists it.
type LiveInstance struct {
	ID         int64  `json:"id"`
	OrgID      int64  `json:"org_id"`
	Name       string `json:"name"`
	SubnetID   int64  `json:"subnet_id"`
	Role       string `json:"role"`
	State      string `json:"state"`
	IPv4       string `json:"ipv4"`
	PublicIPv4 string `json:"public_ipv4"`
}

// LiveInstances returns every VM not deleted, of every org, by id.
func (s *Simulator) LiveInstances(ctx context.Context) ([]LiveInstance, error) {
	rows, err := s.db.Query(ctx,
		`SELECT v.id, v.org_id, v.name, v.subnet_id, v.role, v.state, coalesce(i.ipv4, ''), coalesce(i.public_ipv4, '')
		 FROM vms v LEFT JOIN interfaces i ON i.vm_id = v.id AND i.is_primary
		 WHERE v.deleted_at IS NULL ORDER BY v.id`)
	if err != nil {
		return nil, fmt.Errorf("listing live vms: %w", err)
	}
	list, err := pgx.CollectRows(rows, pgx.RowToStructByPos[LiveInstance])
	if err != nil {
		return nil, fmt.Errorf("listing live vms: %w", err)
	}
	return list, nil
}

func (s *Simulator) listInstances(w http.ResponseWriter, r *http.Request) {
	list, err := s.LiveInstances(r.Context())
	if err != nil {
		s.internal(w, r, "listing instances", err)
		return
	}
	if list == nil {
		list = []LiveInstance{}
	}
	writeJSON(w, http.StatusOK, map[string][]LiveInstance{"instances": list})
}
