package localaws

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	kmstypes "github.com/aws/aws-sdk-go-v2/service/kms/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	smtypes "github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"
	"github.com/jackc/pgx/v5"

	"github.com/excloud/k8sapi/internal/devstack/proc"
)

// Local AWS identity: moto accepts any credentials; these are the ones its
// documentation uses, and the region and account every local piece agrees
// on (the Runtime API's function ARNs, the gateway's events).
const (
	AccountID      = "123456789012"
	LocalRegion    = "us-east-1"
	LocalAccessKey = "testing"
	LocalSecretKey = "testing"
	LocalKeyAlias  = "alias/k8sapi-local"
)

// StartMoto returns the endpoint of a moto server: AWS_ENDPOINT_URL if it is
// set and answers, else a moto_server it starts on a free loopback port. dir
// receives nothing today; it is taken for symmetry with EnsurePostgres and
// room for moto's state files.
func StartMoto(ctx context.Context, dir string, log *slog.Logger) (endpoint string, stop func(), err error) {
	_ = dir
	if env := os.Getenv("AWS_ENDPOINT_URL"); env != "" {
		if err := proc.HTTPAnswers(ctx, env); err == nil {
			log.Debug("moto: using AWS_ENDPOINT_URL", "endpoint", env)
			return env, func() {}, nil
		} else {
			log.Warn("moto: AWS_ENDPOINT_URL does not answer; starting moto_server", "err", err)
		}
	}
	bin, ok := proc.LookPath("moto_server")
	if !ok {
		return "", nil, &proc.MissingDependencyError{What: "moto_server (local KMS, Secrets Manager and S3)", Install: "pip install 'moto[server]'"}
	}
	port, err := proc.FreePort()
	if err != nil {
		return "", nil, err
	}
	cmd := exec.Command(bin, "-H", "127.0.0.1", "-p", strconv.Itoa(port))
	p, err := proc.Start("moto_server", cmd, proc.LogWriter{Log: log, Name: "moto"}, syscall.SIGTERM)
	if err != nil {
		return "", nil, err
	}
	stop = func() { p.Stop(syscall.SIGTERM, 5*time.Second) }
	endpoint = fmt.Sprintf("http://127.0.0.1:%d", port)
	if err := proc.WaitFor(ctx, "moto_server", 30*time.Second, p, func(ctx context.Context) error {
		return proc.HTTPAnswers(ctx, endpoint+"/moto-api/")
	}); err != nil {
		stop()
		return "", nil, err
	}
	log.Info("moto: server ready", "endpoint", endpoint)
	return endpoint, stop, nil
}

// AWSConfig is the SDK configuration for a moto endpoint: static test
// credentials, us-east-1, every service client pointed at endpoint.
func AWSConfig(endpoint string) aws.Config {
	return aws.Config{
		Region:       LocalRegion,
		Credentials:  credentials.NewStaticCredentialsProvider(LocalAccessKey, LocalSecretKey, ""),
		BaseEndpoint: aws.String(endpoint),
	}
}

// CreateKMSKey creates a symmetric ENCRYPT_DECRYPT key and returns its id.
// With a non-empty alias it first reuses the key the alias names (a reused
// moto keeps its keys), else creates the key and the alias.
func CreateKMSKey(ctx context.Context, cfg aws.Config, alias string) (keyID string, err error) {
	client := kms.NewFromConfig(cfg)
	if alias != "" {
		out, err := client.DescribeKey(ctx, &kms.DescribeKeyInput{KeyId: aws.String(alias)})
		if err == nil {
			return aws.ToString(out.KeyMetadata.KeyId), nil
		}
		var nf *kmstypes.NotFoundException
		if !errors.As(err, &nf) {
			return "", fmt.Errorf("looking up KMS alias %s: %w", alias, err)
		}
	}
	out, err := client.CreateKey(ctx, &kms.CreateKeyInput{
		KeySpec:     kmstypes.KeySpecSymmetricDefault,
		KeyUsage:    kmstypes.KeyUsageTypeEncryptDecrypt,
		Description: aws.String("k8sapi local: wraps cluster data keys"),
	})
	if err != nil {
		return "", fmt.Errorf("creating KMS key: %w", err)
	}
	keyID = aws.ToString(out.KeyMetadata.KeyId)
	if alias != "" {
		if _, err := client.CreateAlias(ctx, &kms.CreateAliasInput{AliasName: aws.String(alias), TargetKeyId: aws.String(keyID)}); err != nil {
			return "", fmt.Errorf("creating KMS alias %s: %w", alias, err)
		}
	}
	return keyID, nil
}

// DBSecret is the RDS-style JSON AWS stores for a database: what
// internal/config reads back from DB_SECRET_ARN. SSLMode is our addition
// (absent in RDS secrets, where the reader defaults to require).
type DBSecret struct {
	Username string `json:"username"`
	Password string `json:"password"`
	Host     string `json:"host"`
	Port     int    `json:"port"`
	DBName   string `json:"dbname"`
	Engine   string `json:"engine"`
	SSLMode  string `json:"sslmode,omitempty"`
}

// DBSecretFromDSN splits a DSN into the RDS-style secret fields.
func DBSecretFromDSN(dsn string) (DBSecret, error) {
	pc, err := pgx.ParseConfig(dsn)
	if err != nil {
		return DBSecret{}, fmt.Errorf("parsing DSN: %w", err)
	}
	s := DBSecret{
		Username: pc.User, Password: pc.Password, Host: pc.Host, Port: int(pc.Port),
		DBName: pc.Database, Engine: "postgres", SSLMode: "disable",
	}
	if pc.TLSConfig != nil {
		s.SSLMode = "require"
	}
	if u, err := url.Parse(dsn); err == nil && u.Query().Get("sslmode") != "" {
		s.SSLMode = u.Query().Get("sslmode")
	}
	return s, nil
}

// PutDBSecret stores secret under name in Secrets Manager (creating it, or
// adding a new version if it exists) and returns its ARN.
func PutDBSecret(ctx context.Context, cfg aws.Config, name string, secret DBSecret) (arn string, err error) {
	body, err := json.Marshal(secret)
	if err != nil {
		return "", err
	}
	client := secretsmanager.NewFromConfig(cfg)
	out, err := client.CreateSecret(ctx, &secretsmanager.CreateSecretInput{
		Name: aws.String(name), SecretString: aws.String(string(body)),
		Description: aws.String("k8sapi local: database credentials (RDS-style JSON)"),
	})
	if err == nil {
		return aws.ToString(out.ARN), nil
	}
	var exists *smtypes.ResourceExistsException
	if !errors.As(err, &exists) {
		return "", fmt.Errorf("creating secret %s: %w", name, err)
	}
	put, err := client.PutSecretValue(ctx, &secretsmanager.PutSecretValueInput{SecretId: aws.String(name), SecretString: aws.String(string(body))})
	if err != nil {
		return "", fmt.Errorf("updating secret %s: %w", name, err)
	}
	return aws.ToString(put.ARN), nil
}

// LocalSnapshotBucket is the local stack's etcd snapshots bucket
// (ETCD_SNAPSHOT_BUCKET), in moto's S3.
const LocalSnapshotBucket = "k8sapi-local-etcd-snapshots"

// CreateBucket makes the S3 bucket name in moto, encrypted by default with
// SSE-KMS under keyID (as template.yaml's bucket is with its key), public
// access blocked. A bucket that exists already (a reused moto) is taken as
// is.
func CreateBucket(ctx context.Context, cfg aws.Config, name, keyID string) error {
	client := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true })
	_, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)})
	var owned *s3types.BucketAlreadyOwnedByYou
	var exists *s3types.BucketAlreadyExists
	if err != nil && !errors.As(err, &owned) && !errors.As(err, &exists) {
		return fmt.Errorf("creating bucket %s: %w", name, err)
	}
	if keyID != "" {
		_, err = client.PutBucketEncryption(ctx, &s3.PutBucketEncryptionInput{Bucket: aws.String(name),
			ServerSideEncryptionConfiguration: &s3types.ServerSideEncryptionConfiguration{Rules: []s3types.ServerSideEncryptionRule{{
				ApplyServerSideEncryptionByDefault: &s3types.ServerSideEncryptionByDefault{
					SSEAlgorithm: s3types.ServerSideEncryptionAwsKms, KMSMasterKeyID: aws.String(keyID)},
				BucketKeyEnabled: aws.Bool(true),
			}}}})
		if err != nil {
			return fmt.Errorf("encrypting bucket %s: %w", name, err)
		}
	}
	_, err = client.PutPublicAccessBlock(ctx, &s3.PutPublicAccessBlockInput{Bucket: aws.String(name),
		PublicAccessBlockConfiguration: &s3types.PublicAccessBlockConfiguration{BlockPublicAcls: aws.Bool(true),
			BlockPublicPolicy: aws.Bool(true), IgnorePublicAcls: aws.Bool(true), RestrictPublicBuckets: aws.Bool(true)}})
	if err != nil {
		return fmt.Errorf("blocking public access to bucket %s: %w", name, err)
	}
	return nil
}
