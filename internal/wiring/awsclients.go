package wiring

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/excloud/k8sapi/internal/config"
	"github.com/excloud/k8sapi/internal/envelope"
)

// The SDK's clients reach the envelope and the configuration as method
// values, never as interface values nor as fields of one. A function that
// renders templates links text/template, whose calls of methods by name
// make the linker keep every exported method of every type stored in an
// interface (and of the types of its fields): a *kms.Client reachable so
// would bring every KMS operation into the binary; as method values, only
// the calls we make.

// kmsCalls are the two KMS calls the envelope makes.
type kmsCalls struct {
	generate func(context.Context, *kms.GenerateDataKeyInput, ...func(*kms.Options)) (*kms.GenerateDataKeyOutput, error)
	decrypt  func(context.Context, *kms.DecryptInput, ...func(*kms.Options)) (*kms.DecryptOutput, error)
}

var _ envelope.KMS = kmsCalls{}

func kmsCallsOf(c *kms.Client) kmsCalls {
	return kmsCalls{generate: c.GenerateDataKey, decrypt: c.Decrypt}
}

func (k kmsCalls) GenerateDataKey(ctx context.Context, in *kms.GenerateDataKeyInput, opts ...func(*kms.Options)) (*kms.GenerateDataKeyOutput, error) {
	return k.generate(ctx, in, opts...)
}

func (k kmsCalls) Decrypt(ctx context.Context, in *kms.DecryptInput, opts ...func(*kms.Options)) (*kms.DecryptOutput, error) {
	return k.decrypt(ctx, in, opts...)
}

// secretCalls is the one Secrets Manager call the configuration makes.
type secretCalls func(context.Context, *secretsmanager.GetSecretValueInput, ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)

var _ config.SecretGetter = secretCalls(nil)

func (get secretCalls) GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput,
	opts ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	return get(ctx, in, opts...)
}
