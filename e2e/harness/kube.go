package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
)

// KubeConfig loads a kubeconfig (its bytes) as a client config whose
// connections are made with dial. host, when set, replaces the server URL
// (the TLS server name stays the host's, so the serving cert must name it).
// resolve, when set, rewrites every dialled address first: it is how a DNS
// name that exists nowhere here is pointed at a node.
func KubeConfig(kubeconfig []byte, host string, dial DialFunc, resolve map[string]string) (*rest.Config, error) {
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	if host != "" {
		cfg.Host = host
	}
	cfg.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if to, ok := resolve[addr]; ok {
			addr = to
		}
		return dial(ctx, network, addr)
	}
	cfg.Timeout = 15 * time.Second
	cfg.QPS, cfg.Burst = 50, 100
	return cfg, nil
}

// Readyz returns nil when GET /readyz answers 200 "ok", else the body.
func Readyz(ctx context.Context, cfg *rest.Config) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	var code int
	body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).StatusCode(&code).Raw()
	if err != nil {
		return fmt.Errorf("/readyz (%d): %w: %s", code, err, lastLines(string(body), 8))
	}
	if code != 200 || strings.TrimSpace(string(body)) != "ok" {
		return fmt.Errorf("/readyz answered %d: %s", code, lastLines(string(body), 8))
	}
	return nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// DryRunApply sends every object of a multi-document YAML manifest as a
// server-side apply with dryRun=All and returns "Kind/namespace/name" of
// each accepted object, or the first refusal.
func DryRunApply(ctx context.Context, cfg *rest.Config, manifest []byte) ([]string, error) {
	return apply(ctx, cfg, manifest, []string{metav1.DryRunAll})
}

// Apply applies every object of a multi-document YAML manifest (a
// server-side apply, as kubectl apply --server-side) and returns
// "Kind/namespace/name" of each, or the first refusal.
func Apply(ctx context.Context, cfg *rest.Config, manifest []byte) ([]string, error) {
	return apply(ctx, cfg, manifest, nil)
}

func apply(ctx context.Context, cfg *rest.Config, manifest []byte, dryRun []string) ([]string, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifest), 4096)
	var done []string
	for {
		var obj unstructured.Unstructured
		if err := dec.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return done, fmt.Errorf("decoding manifest: %w", err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		gvk := obj.GroupVersionKind()
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return done, fmt.Errorf("%s %s: no such API: %w", gvk, obj.GetName(), err)
		}
		data, err := obj.MarshalJSON()
		if err != nil {
			return done, err
		}
		ri := dyn.Resource(mapping.Resource)
		var target dynamic.ResourceInterface = ri
		if mapping.Scope.Name() == "namespace" {
			ns := obj.GetNamespace()
			if ns == "" {
				ns = "default"
			}
			target = ri.Namespace(ns)
		}
		force := true
		if _, err := target.Patch(ctx, obj.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{
			DryRun: dryRun, FieldManager: "exk8s-e2e", Force: &force,
		}); err != nil {
			return done, fmt.Errorf("apply (dry run: %v) of %s %s/%s: %w", dryRun, gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
		}
		done = append(done, fmt.Sprintf("%s/%s/%s", gvk.Kind, obj.GetNamespace(), obj.GetName()))
	}
	if len(done) == 0 {
		return nil, errors.New("manifest holds no objects")
	}
	return done, nil
}
