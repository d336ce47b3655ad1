package pki

import (
	"encoding/asn1"
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
