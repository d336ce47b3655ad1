package wiring

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/excloud/k8sapi/internal/envelope"
)

// The SDK's KMS client reaches the envelope as method values, never as an
// interface value nor as a field of one. A function that
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
