package config

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"time"
)

// Pool is DB as typed values for the store's pool. A zero field means the
// store's default (store.PoolSettings documents each).
type Pool struct {
	ProxyEndpoint    string
	IAMAuth          bool
	MaxConns         int32
	ConnMaxLifetime  time.Duration
	StatementTimeout time.Duration
	QueryExecMode    string
}

// Pool returns the pool settings. FromLookup has already rejected values
// that do not parse, so a failure here cannot happen for a loaded Config.
func (d DB) Pool() Pool {
	maxConns, _ := strconv.ParseInt(d.MaxConns, 10, 32)
	lifetime, _ := time.ParseDuration(d.ConnMaxLifetime)
	timeout, _ := time.ParseDuration(d.StatementTimeout)
	iam, _ := strconv.ParseBool(d.IAMAuth)
	return Pool{
		ProxyEndpoint: d.ProxyEndpoint, IAMAuth: iam, MaxConns: int32(maxConns),
		ConnMaxLifetime: lifetime, StatementTimeout: timeout, QueryExecMode: d.QueryExecMode,
	}
}

// maxPoolConns bounds DB_MAX_CONNS: a Lambda execution environment serves
// one request at a time, so more connections only hold proxy slots idle.
const maxPoolConns = 8

func checkMaxConns(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > maxPoolConns {
		return errors.New("must be a whole number from 1 to " + strconv.Itoa(maxPoolConns))
	}
	return nil
}

func checkDuration(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return errors.New("must be a positive duration like 10s or 5m")
	}
	return nil
}

func checkBool(s string) error {
	if _, err := strconv.ParseBool(s); err != nil {
		return errors.New("must be true or false")
	}
	return nil
}

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
