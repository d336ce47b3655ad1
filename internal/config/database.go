package config

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/rds/auth"
)

// SecretGetter is the one Secrets Manager call DatabaseDSN makes
// (internal/awssecret).
type SecretGetter interface {
	SecretString(ctx context.Context, id string) (string, error)
}

// AWS builds the SDK configuration from the Lambda environment: the region
// (AWS_REGION), the execution role's credentials (AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, which Lambda, sam local and the
// local stack all set) and an optional AWS_ENDPOINT_URL (moto locally).
//
// It does not use the SDK's config.LoadDefaultConfig on purpose: that
// resolver links SSO, STS, IMDS and shared-file support a Lambda never uses,
// about a fifth of each function binary, and reads files at cold start.
func AWS(ctx context.Context) (aws.Config, error) { return AWSFromLookup(os.LookupEnv) }

// AWSFromLookup is AWS reading the environment through lookup (tests).
// Like the SDK's own loader it does not fail on missing settings: a
// function that never calls AWS (health without ?deep=1) must still start,
// and one that does gets a clear error from its first call.
func AWSFromLookup(lookup func(string) (string, bool)) (aws.Config, error) {
	get := func(name string) string { v, _ := lookup(name); return strings.TrimSpace(v) }
	cfg := aws.Config{Region: get("AWS_REGION")}
	if cfg.Region == "" {
		cfg.Region = get("AWS_DEFAULT_REGION")
	}
	if id, secret := get("AWS_ACCESS_KEY_ID"), get("AWS_SECRET_ACCESS_KEY"); id != "" && secret != "" {
		cfg.Credentials = aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(id, secret, get("AWS_SESSION_TOKEN")))
	}
	if ep := get("AWS_ENDPOINT_URL"); ep != "" {
		cfg.BaseEndpoint = aws.String(ep)
	}
	return cfg, nil
}

// DatabaseDSN returns DATABASE_URL if set, else builds a DSN from the
// RDS-style JSON secret at DB_SECRET_ARN, addressed to DB_PROXY_ENDPOINT
// when that is set (the proxy authenticates with the same secret). Call it
// once per cold start. secrets may be nil when DATABASE_URL is set.
func DatabaseDSN(ctx context.Context, cfg Config, secrets SecretGetter) (string, error) {
	if cfg.DatabaseURL != "" {
		return cfg.DatabaseURL, nil
	}
	if cfg.DBSecretARN == "" {
		return "", errors.New("database: neither DATABASE_URL nor DB_SECRET_ARN is set")
	}
	if secrets == nil {
		return "", errors.New("database: DB_SECRET_ARN is set but no Secrets Manager client was given")
	}
	body, err := secrets.SecretString(ctx, cfg.DBSecretARN)
	if err != nil {
		return "", fmt.Errorf("reading the database secret: %w", err)
	}
	return dsnFromSecret(body, cfg.DB.ProxyEndpoint, serverCheck(cfg))
}

// verifyFull is the only sslmode outside local runs: TLS, the server's
// certificate chained to a trusted root and naming the host dialled.
const verifyFull = "verify-full"

// tlsCheck is how a DSN built from a secret verifies the database: ""
// leaves the secret's sslmode (local runs), else sslmode=verify-full with
// this sslrootcert (a CA bundle file, or "system" for the system's roots).
type tlsCheck string

// serverCheck is the database TLS check cfg asks for.
func serverCheck(cfg Config) tlsCheck {
	switch {
	case cfg.LocalRun:
		return ""
	case cfg.DB.CABundle != "":
		return tlsCheck(cfg.DB.CABundle)
	}
	return "system"
}

// proxyPort is where RDS Proxy listens for PostgreSQL, whatever port the
// database behind it uses.
const proxyPort = 5432

// rdsSecret is the JSON AWS keeps for RDS credentials. sslmode is not an RDS
// field: the local stack sets it to "disable"; absent, we require TLS,
// which every RDS endpoint offers.
type rdsSecret struct {
	Username string          `json:"username"`
	Password string          `json:"password"`
	Host     string          `json:"host"`
	Port     json.RawMessage `json:"port"` // RDS writes a number; hand-made secrets often a string
	DBName   string          `json:"dbname"`
	Engine   string          `json:"engine"`
	SSLMode  string          `json:"sslmode"`
}

func dsnFromSecret(body, proxyHost string, check tlsCheck) (string, error) {
	var s rdsSecret
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		// The error text of encoding/json can quote the input: not wrapped.
		return "", errors.New("database secret: not valid JSON")
	}
	var errs []error
	if s.Username == "" {
		errs = append(errs, errors.New("database secret: username is empty"))
	}
	if s.Host == "" {
		errs = append(errs, errors.New("database secret: host is empty"))
	}
	switch s.Engine {
	case "", "postgres", "aurora-postgresql":
	default:
		errs = append(errs, fmt.Errorf("database secret: engine %q is not PostgreSQL", s.Engine))
	}
	port, err := secretPort(s.Port)
	if err != nil {
		errs = append(errs, err)
	}
	if check != "" && s.SSLMode != "" && s.SSLMode != verifyFull {
		errs = append(errs, errors.New("database secret: sslmode must be verify-full (or absent) outside local runs"))
	}
	if err := errors.Join(errs...); err != nil {
		return "", err
	}
	if s.DBName == "" {
		s.DBName = "postgres"
	}
	if s.SSLMode == "" {
		s.SSLMode = "require"
	}
	if proxyHost != "" {
		s.Host, port = proxyHost, proxyPort
	}
	query := url.Values{"sslmode": {s.SSLMode}}
	if check != "" {
		query = url.Values{"sslmode": {verifyFull}, "sslrootcert": {string(check)}}
	}
	u := url.URL{
		Scheme:   "postgres",
		User:     url.UserPassword(s.Username, s.Password),
		Host:     net.JoinHostPort(s.Host, strconv.Itoa(port)),
		Path:     "/" + s.DBName,
		RawQuery: query.Encode(),
	}
	return u.String(), nil
}

func secretPort(raw json.RawMessage) (int, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 5432, nil
	}
	var n int
	if err := json.Unmarshal(raw, &n); err == nil && n > 0 && n < 65536 {
		return n, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		if n, err := strconv.Atoi(s); err == nil && n > 0 && n < 65536 {
			return n, nil
		}
	}
	return 0, errors.New("database secret: port must be a number from 1 to 65535")
}

// DBAuthToken returns what signs an RDS IAM authentication token for one
// new connection (DB_IAM_AUTH=true): a SigV4-presigned URL valid for 15
// minutes, made locally from the execution role's credentials, so each
// connection costs no AWS call.
func DBAuthToken(awsCfg aws.Config) func(ctx context.Context, host string, port uint16, user string) (string, error) {
	return func(ctx context.Context, host string, port uint16, user string) (string, error) {
		if awsCfg.Credentials == nil || awsCfg.Region == "" {
			return "", errors.New("database IAM auth: no AWS credentials or region in the environment")
		}
		endpoint := net.JoinHostPort(host, strconv.Itoa(int(port)))
		token, err := auth.BuildAuthToken(ctx, endpoint, awsCfg.Region, user, awsCfg.Credentials)
		if err != nil {
			return "", fmt.Errorf("signing the database IAM auth token: %w", err)
		}
		return token, nil
	}
}
