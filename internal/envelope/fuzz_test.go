package envelope

import (
	"bytes"
	"errors"
	"testing"
)

// fuzzKey is a data key built without KMS (newDataKey is what NewDataKey
// and OpenDataKey call once KMS has answered).
func fuzzKey(t testing.TB) *DataKey {
	k, err := newDataKey(Scope{OrgID: 7, ClusterID: 42}, bytes.Repeat([]byte{0x42}, keyBytes), []byte("wrapped"), "test")
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// FuzzOpen feeds the opener random bytes for random purposes: it never
// panics, fails closed with exactly ErrOpen and no plaintext, and opens
// nothing it did not seal. Each input is also sealed as a plaintext, and the
// seal must not open with one byte flipped, another purpose or another node.
func FuzzOpen(f *testing.F) {
	k := fuzzKey(f)
	// The same key bytes under another cluster's scope: the additional data
	// names org and cluster, so nothing moves between clusters.
	otherCluster, err := newDataKey(Scope{OrgID: 7, ClusterID: 43}, bytes.Repeat([]byte{0x42}, keyBytes), nil, "test")
	if err != nil {
		f.Fatal(err)
	}
	seedPlain := []byte("-----BEGIN PRIVATE KEY-----\n")
	sealedOK, err := k.Seal(Purpose{Name: "ca-key"}, seedPlain)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(sealedOK, "ca-key", int64(0), uint16(3))
	f.Add(sealedOK, "ca-key", int64(1), uint16(0))
	f.Add(sealedOK, "etcd-peer-key", int64(0), uint16(40))
	f.Add([]byte{}, "", int64(0), uint16(0))
	f.Add([]byte{formatV1}, "apiserver-key", int64(5), uint16(1))
	f.Add(append([]byte{2}, sealedOK[1:]...), "ca-key", int64(0), uint16(9))
	f.Add(bytes.Repeat([]byte{formatV1}, 29), "service-account-key", int64(-1), uint16(65535))
	f.Fuzz(func(t *testing.T, sealed []byte, name string, vm int64, flip uint16) {
		p := Purpose{Name: name, VMID: vm}
		plain, err := k.Open(p, sealed)
		if err == nil {
			// Only a seal of the seed's plaintext opens (each fuzzing process
			// seals it under its own nonce), and only as what it was.
			if !bytes.Equal(plain, seedPlain) || p != (Purpose{Name: "ca-key"}) {
				t.Fatalf("opened bytes it never sealed: %x", sealed)
			}
		} else if err != ErrOpen || plain != nil {
			t.Fatalf("Open failed with %v (plaintext %d bytes), want exactly ErrOpen", err, len(plain))
		}

		s, err := k.Seal(p, sealed)
		if err != nil {
			t.Fatal(err)
		}
		if back, err := k.Open(p, s); err != nil || !bytes.Equal(back, sealed) {
			t.Fatalf("round trip: %v", err)
		}
		if out, err := otherCluster.Open(p, s); err != ErrOpen || out != nil {
			t.Fatalf("opened under another cluster: %v", err)
		}
		bad := bytes.Clone(s)
		bad[int(flip)%len(bad)] ^= 1 << (flip % 8)
		for _, c := range []struct {
			what  string
			p     Purpose
			bytes []byte
		}{
			{"a flipped byte", p, bad},
			{"another purpose", Purpose{Name: name + "x", VMID: vm}, s},
			{"another node", Purpose{Name: name, VMID: vm ^ 1}, s},
			{"truncated", p, s[:len(s)-1]},
		} {
			if out, err := k.Open(c.p, c.bytes); !errors.Is(err, ErrOpen) || out != nil {
				t.Fatalf("%s opened: %v", c.what, err)
			}
		}
	})
}
