package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Local runs keep the secret's sslmode (the local stack's is disable).
func TestDSNFromSecret(t *testing.T) {
	for _, tc := range []struct{ name, secret, proxy, want, err string }{
		{"rds", `{"username":"app","password":"p@ss word","host":"db.example","port":5432,"dbname":"k8sapi","engine":"postgres"}`,
			"", "postgres://app:p%40ss%20word@db.example:5432/k8sapi?sslmode=require", ""},
		{"through the proxy", `{"username":"app","password":"pw","host":"db.example","port":6432,"dbname":"k8sapi"}`,
			"prx.proxy-abc.eu-west-1.rds.amazonaws.com", "postgres://app:pw@prx.proxy-abc.eu-west-1.rds.amazonaws.com:5432/k8sapi?sslmode=require", ""},
		{"string port, no dbname, local", `{"username":"postgres","host":"127.0.0.1","port":"6543","sslmode":"disable"}`,
			"", "postgres://postgres:@127.0.0.1:6543/postgres?sslmode=disable", ""},
		{"no port", `{"username":"u","password":"p","host":"::1"}`, "", "postgres://u:p@[::1]:5432/postgres?sslmode=require", ""},
		{"bad", `{"engine":"mysql","port":0}`, "", "",
			"database secret: username is empty\ndatabase secret: host is empty\ndatabase secret: engine \"mysql\" is not PostgreSQL\ndatabase secret: port must be a number from 1 to 65535"},
		{"not json", `password=hunter2`, "", "", "database secret: not valid JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := dsnFromSecret(tc.secret, tc.proxy, "")
			wantDSN(t, got, err, tc.want, tc.err)
		})
	}
}

// Outside local runs every DSN from a secret verifies the server: the
// secret may not weaken it, and the roots are the CA bundle file or the
// system's.
func TestDSNFromSecretVerifiesTheServer(t *testing.T) {
	proxy := "prx.proxy-abc.eu-west-1.rds.amazonaws.com"
	for _, tc := range []struct {
		name, secret string
		check        tlsCheck
		want, err    string
	}{
		{"proxy, system roots", `{"username":"app","password":"pw","host":"db.example"}`, "system",
			"postgres://app:pw@" + proxy + ":5432/postgres?sslmode=verify-full&sslrootcert=system", ""},
		{"RDS CA bundle", `{"username":"app","password":"pw","host":"db.example","sslmode":"verify-full"}`, "/opt/rds/global-bundle.pem",
			"postgres://app:pw@" + proxy + ":5432/postgres?sslmode=verify-full&sslrootcert=%2Fopt%2Frds%2Fglobal-bundle.pem", ""},
		{"secret says disable", `{"username":"app","password":"pw","host":"db.example","sslmode":"disable"}`, "system", "",
			"database secret: sslmode must be verify-full (or absent) outside local runs"},
		{"secret says require", `{"username":"app","password":"pw","host":"db.example","sslmode":"require"}`, "system", "",
			"database secret: sslmode must be verify-full (or absent) outside local runs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := dsnFromSecret(tc.secret, proxy, tc.check)
			wantDSN(t, got, err, tc.want, tc.err)
		})
	}
	if got := serverCheck(Config{LocalRun: true, DB: DB{CABundle: "/x.pem"}}); got != "" {
		t.Errorf("a local run verifies %q", got)
	}
	if got := serverCheck(Config{DB: DB{CABundle: "/x.pem"}}); got != "/x.pem" {
		t.Errorf("the CA bundle gave %q", got)
	}
	if got := serverCheck(Config{}); got != "system" {
		t.Errorf("no CA bundle gave %q", got)
	}
}

// The DSN means what it says to pgx: the CA bundle file (made here, never
// downloaded) is the only root, and the host dialled is the name checked.
func TestVerifyFullDSNParsesToAStrictTLSConfig(t *testing.T) {
	bundle := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(bundle, selfSignedCA(t), 0o600); err != nil {
		t.Fatal(err)
	}
	dsn, err := dsnFromSecret(`{"username":"app","password":"pw","host":"db.example"}`, "prx.example", tlsCheck(bundle))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	tc := cfg.TLSConfig
	if tc == nil || tc.InsecureSkipVerify && tc.VerifyPeerCertificate == nil || tc.ServerName != "prx.example" || tc.RootCAs == nil {
		t.Fatalf("TLS config %+v: want the bundle as roots and the proxy's name verified", tc)
	}
	for _, f := range cfg.Fallbacks {
		if f.TLSConfig == nil {
			t.Error("verify-full must not fall back to plaintext")
		}
	}
}

func selfSignedCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test RDS CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// wantDSN: the DSN is want, or, when wantErr is set, the error says exactly
// that.
func wantDSN(t *testing.T, got string, err error, want, wantErr string) {
	t.Helper()
	if wantErr != "" {
		if err == nil || err.Error() != wantErr {
			t.Fatalf("err %v, want %q", err, wantErr)
		}
		return
	}
	if err != nil || got != want {
		t.Fatalf("got %q, %v; want %q", got, err, want)
	}
}
