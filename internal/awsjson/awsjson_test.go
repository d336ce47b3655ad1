package awsjson

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

func TestRequestIsASignedJSONCall(t *testing.T) {
	cfg := aws.Config{Region: "eu-west-1", Credentials: credentials.NewStaticCredentialsProvider("AKID", "secret", "")}
	req, err := Request(context.Background(), cfg, "codedeploy", "CodeDeploy_20141006.Op", []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if req.URL.String() != "https://codedeploy.eu-west-1.amazonaws.com/" || req.Header.Get("X-Amz-Target") != "CodeDeploy_20141006.Op" ||
		req.Header.Get("Content-Type") != "application/x-amz-json-1.1" ||
		!strings.Contains(req.Header.Get("Authorization"), "Credential=AKID/") ||
		!strings.Contains(req.Header.Get("Authorization"), "/eu-west-1/codedeploy/aws4_request") {
		t.Fatalf("request %s %v", req.URL, req.Header)
	}
	if _, err := Request(context.Background(), aws.Config{Region: "eu-west-1"}, "codedeploy", "Op", nil); err == nil {
		t.Fatal("no credentials, yet a request")
	}
}

func TestEndpointPrefersTheConfiguredOne(t *testing.T) {
	base := "http://127.0.0.1:5000"
	if got := Endpoint(aws.Config{Region: "r", BaseEndpoint: &base}, "secretsmanager"); got != base+"/" {
		t.Errorf("endpoint %q", got)
	}
}
