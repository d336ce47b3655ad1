package config

import (
	"errors"
	"net"
	"strings"
	"time"
)

// DB shapes the connection to the database and its pool. A zero field
// means the store's default (store.PoolSettings documents each), which is
// the shape behind RDS Proxy.
type DB struct {
	ProxyEndpoint string // connect here instead of the secret's host (RDS Proxy)
	// CABundle is a PEM file of the CAs the database's certificate chains
	// to (the RDS CA bundle, packaged with the function); empty: the
	// system's roots, which hold RDS Proxy's (Amazon Trust Services).
	CABundle         string
	IAMAuth          bool // an RDS IAM auth token per connection instead of the password
	MaxConns         int32
	ConnMaxLifetime  time.Duration
	StatementTimeout time.Duration
	QueryExecMode    string // exec or simple_protocol: neither creates named prepared statements
}

// maxPoolConns bounds DB_MAX_CONNS: a Lambda execution environment serves
// one request at a time, so more connections only hold proxy slots idle.
const maxPoolConns = 8

// checkQueryExecMode allows only the pgx modes that never create a named
// prepared statement: a named statement pins an RDS Proxy session.
func checkQueryExecMode(s string) error {
	switch s {
	case "exec", "simple_protocol":
		return nil
	}
	return errors.New("must be exec or simple_protocol")
}

// checkHost accepts a host name or address without scheme, port or path.
func checkHost(s string) error {
	if net.ParseIP(s) != nil {
		return nil
	}
	if strings.ContainsAny(s, ":/ ") || !domainRE.MatchString(strings.ToLower(s)) {
		return errors.New("must be a host name without scheme or port")
	}
	return nil
}
