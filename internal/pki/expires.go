package pki

import (
	"bytes"
	"encoding/asn1"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"time"
)

// tbsValidity is the start of a certificate's to-be-signed part up to its
// validity (RFC 5280, 4.1): what ExpiresAt reads; the fields after it are
// left unread.
type tbsValidity struct {
	Version   int `asn1:"optional,explicit,default:0,tag:0"`
	Serial    asn1.RawValue
	Signature asn1.RawValue
	Issuer    asn1.RawValue
	Validity  struct{ NotBefore, NotAfter time.Time }
}

// ExpiresAt is the end of the validity of the certificate in certPEM,
// read from its DER without parsing the rest (keys, extensions): a page of
// clusters shows each CA's expiry, and a full parse of every CA of 50
// clusters was a fifth of the page's CPU. It checks nothing else of the
// certificate: use NotAfter (a full parse) where the certificate is judged.
func ExpiresAt(certPEM []byte) (time.Time, error) {
	if t, ok := quickExpiry(certPEM); ok {
		return t, nil
	}
	return expiresAt(certPEM)
}

// expiresAt is ExpiresAt through encoding/pem and encoding/asn1: what
// quickExpiry leaves to it (anything not laid out as k8sapi writes it), and
// every error.
func expiresAt(certPEM []byte) (time.Time, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil || block.Type != "CERTIFICATE" {
		return time.Time{}, errors.New("reading a certificate's expiry: no CERTIFICATE PEM block")
	}
	var cert struct {
		TBS asn1.RawValue
	}
	var tbs tbsValidity
	if _, err := asn1.Unmarshal(block.Bytes, &cert); err != nil {
		return time.Time{}, fmt.Errorf("reading a certificate's expiry: %w", err)
	}
	if _, err := asn1.Unmarshal(cert.TBS.FullBytes, &tbs); err != nil {
		return time.Time{}, fmt.Errorf("reading a certificate's expiry: %w", err)
	}
	return tbs.Validity.NotAfter, nil
}

// The PEM lines of a certificate.
var (
	pemBegin = []byte("-----BEGIN CERTIFICATE-----")
	pemEnd   = []byte("-----END CERTIFICATE-----")
)

// quickExpiry reads the end of validity of a PEM certificate without
// encoding/pem or encoding/asn1's reflection: the body decoded in one pass
// (base64 skips its newlines), then the DER walked to the validity. A page
// of 100 clusters reads 300 CA certificates, and the two packages were
// most of a view's CPU. False for anything it does not read exactly (PEM
// headers, long forms it does not expect, times not in RFC 5280's form):
// ExpiresAt then reads it the slow way, so the two never answer
// differently.
func quickExpiry(certPEM []byte) (time.Time, bool) {
	begin := bytes.Index(certPEM, pemBegin)
	if begin < 0 {
		return time.Time{}, false
	}
	body := certPEM[begin+len(pemBegin):]
	end := bytes.Index(body, pemEnd)
	if end < 0 {
		return time.Time{}, false
	}
	der := make([]byte, base64.StdEncoding.DecodedLen(end))
	n, err := base64.StdEncoding.Decode(der, bytes.TrimSpace(body[:end]))
	if err != nil {
		return time.Time{}, false
	}
	return validityEnd(der[:n])
}

// validityEnd walks a certificate's DER to its notAfter (RFC 5280, 4.1):
// Certificate, TBSCertificate, [0] version if present, serial, signature,
// issuer, validity.
func validityEnd(der []byte) (time.Time, bool) {
	tag, cert, _, ok := derElement(der)
	if !ok || tag != 0x30 {
		return time.Time{}, false
	}
	tag, tbs, _, ok := derElement(cert)
	if !ok || tag != 0x30 {
		return time.Time{}, false
	}
	if len(tbs) > 0 && tbs[0] == 0xa0 { // explicit version
		if _, _, tbs, ok = derElement(tbs); !ok {
			return time.Time{}, false
		}
	}
	for _, want := range []byte{0x02, 0x30, 0x30} { // serial, signature, issuer
		if tag, _, tbs, ok = derElement(tbs); !ok || tag != want {
			return time.Time{}, false
		}
	}
	tag, validity, _, ok := derElement(tbs)
	if !ok || tag != 0x30 {
		return time.Time{}, false
	}
	if _, _, validity, ok = derElement(validity); !ok { // notBefore
		return time.Time{}, false
	}
	tag, notAfter, _, ok := derElement(validity)
	if !ok {
		return time.Time{}, false
	}
	return derTime(tag, notAfter)
}

// derElement is one DER element of b: its tag, its contents and what
// follows it (lengths of up to three bytes: a certificate's).
func derElement(b []byte) (tag byte, content, rest []byte, ok bool) {
	if len(b) < 2 {
		return 0, nil, nil, false
	}
	tag, n, b := b[0], int(b[1]), b[2:]
	if n >= 0x80 {
		size := n & 0x7f
		if size == 0 || size > 3 || len(b) < size {
			return 0, nil, nil, false
		}
		n = 0
		for _, c := range b[:size] {
			n = n<<8 | int(c)
		}
		b = b[size:]
	}
	if len(b) < n {
		return 0, nil, nil, false
	}
	return tag, b[:n], b[n:], true
}

// derTime reads a UTCTime (YYMMDDHHMMSSZ, years 1950-2049) or a
// GeneralizedTime (YYYYMMDDHHMMSSZ): the forms RFC 5280 allows in a
// validity.
func derTime(tag byte, v []byte) (time.Time, bool) {
	var digits []byte
	switch {
	case tag == 0x17 && len(v) == 13 && v[12] == 'Z':
		century := []byte("20")
		if v[0] >= '5' {
			century = []byte("19")
		}
		digits = append(century, v[:12]...)
	case tag == 0x18 && len(v) == 15 && v[14] == 'Z':
		digits = v[:14]
	default:
		return time.Time{}, false
	}
	var f [6]int // year, month, day, hour, minute, second
	for i, c := range digits {
		if c < '0' || c > '9' {
			return time.Time{}, false
		}
		field := 0
		if i >= 4 {
			field = (i-4)/2 + 1
		}
		f[field] = f[field]*10 + int(c-'0')
	}
	t := time.Date(f[0], time.Month(f[1]), f[2], f[3], f[4], f[5], 0, time.UTC)
	if t.Month() != time.Month(f[1]) || t.Day() != f[2] || t.Hour() != f[3] || t.Minute() != f[4] || t.Second() != f[5] {
		return time.Time{}, false // out of range: the slow way refuses it
	}
	return t, true
}
