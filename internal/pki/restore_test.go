package pki

import (
	"bytes"
	"testing"
)

// A restored cluster's trust is its snapshot's cluster's (the same CA
// certificates and keys, service-account signer and Secrets key) except
// the CAs the table makes anew: the etcd CA, so that the old cluster's
// API servers and etcd members cannot reach the restored etcd.
func TestRestoredTrustCopiesAllButTheNewOnRestoreCAs(t *testing.T) {
	is := Issuer{Algorithm: ECDSAP256}
	old, err := is.NewTrust()
	if err != nil {
		t.Fatal(err)
	}
	restored, err := is.RestoredTrust(old)
	if err != nil {
		t.Fatal(err)
	}
	made := 0
	for _, spec := range CertList() {
		if spec.Phase != PhaseRoot {
			continue
		}
		same := bytes.Equal(restored.CAs[spec.Name].CertPEM, old.CAs[spec.Name].CertPEM)
		if same == spec.NewOnRestore {
			t.Errorf("%s: the restored cluster's CA is the old one's: %v; the table says new on restore: %v", spec.Name, same, spec.NewOnRestore)
		}
		if spec.NewOnRestore {
			made++
			checkSelfSigned(t, restored.CAs[spec.Name])
		}
	}
	if made == 0 || !restored.CAs[EtcdCA].Cert.IsCA {
		t.Errorf("no CA made anew on restore (%d); the etcd CA must be", made)
	}
	if restored.ServiceAccount != old.ServiceAccount || !bytes.Equal(restored.SecretsEncryptionKey, old.SecretsEncryptionKey) {
		t.Error("the service-account signer or the Secrets key was not copied")
	}
}

// A trust without a CA the restore copies is refused, not half-made.
func TestRestoredTrustRefusesAMissingCA(t *testing.T) {
	is := Issuer{}
	old, err := is.NewTrust()
	if err != nil {
		t.Fatal(err)
	}
	delete(old.CAs, FrontProxyCA)
	if _, err := is.RestoredTrust(old); err == nil {
		t.Error("RestoredTrust made a trust without the front-proxy CA")
	}
}

func checkSelfSigned(t *testing.T, ca *CA) {
	t.Helper()
	if err := ca.Cert.CheckSignatureFrom(ca.Cert); err != nil || !ca.Cert.IsCA {
		t.Errorf("%s: not a self-signed CA: %v", ca.Cert.Subject.CommonName, err)
	}
}
