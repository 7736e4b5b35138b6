package server

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/server/options/encryptionconfig"
	"k8s.io/apiserver/pkg/storage/value"

	"plainkube.dev/plainkube/internal/apiserver"
	"plainkube.dev/plainkube/internal/registry"
	"plainkube.dev/plainkube/internal/storage"
	"plainkube.dev/plainkube/internal/storage/encrypted"
)

// generatedEncryptionConfig is the EncryptionConfiguration a server
// writes into its data dir at first start when given none: Secrets
// encrypted with aescbc under a key made then, and still read when stored
// in plain text (by a server before this one).
const generatedEncryptionConfig = "encryption-config.yaml"

// encryptAtRest wraps st so that what the EncryptionConfiguration at
// opts.EncryptionProviderConfig (or the generated one) names is encrypted
// in storage. A server kept in memory encrypts only when given a file.
func encryptAtRest(ctx context.Context, st storage.Interface, opts Options, resources []registry.Resource) (storage.Interface, error) {
	path := opts.EncryptionProviderConfig
	if path == "" {
		if opts.InMemory {
			return st, nil
		}
		path = filepath.Join(opts.DataDir, generatedEncryptionConfig)
		if err := ensureEncryptionConfig(path); err != nil {
			return nil, err
		}
	}
	cfg, err := encryptionconfig.LoadEncryptionConfig(ctx, path, false, "plainkube")
	if err != nil {
		return nil, fmt.Errorf("--encryption-provider-config %s: %w", path, err)
	}
	return encrypted.New(st, encryptionPrefixes(cfg.Transformers, resources)), nil
}

// ensureEncryptionConfig writes the generated configuration, mode 0600, if
// path does not exist yet.
func ensureEncryptionConfig(path string) error {
	if _, err := os.Stat(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return err
	}
	config := fmt.Sprintf(`# Made by plainkube server at its first start: Secrets are encrypted in
# etcd with this key. To rotate it, add a new key first in the list, restart,
# rewrite every Secret (kubectl get secrets -A -o json | kubectl replace -f -),
# then remove the old key and restart again.
apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers:
  - aescbc:
      keys:
      - name: key1
        secret: %s
  - identity: {}
`, base64.StdEncoding.EncodeToString(key))
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(config), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// encryptionPrefixes maps the configuration's resources to the storage
// prefixes of their objects: a resource to its own prefix, "*.group" to
// the group's, "*." to each core resource's, "*.*" to every object.
func encryptionPrefixes(transformers map[schema.GroupResource]value.Transformer, resources []registry.Resource) []encrypted.Prefix {
	var out []encrypted.Prefix
	for gr, t := range transformers {
		switch {
		case gr.Group == "*" && gr.Resource == "*":
			out = append(out, encrypted.Prefix{Prefix: "/registry/", Transformer: t})
		case gr.Resource == "*" && gr.Group == "":
			for _, res := range resources {
				if res.Kind.Group == "" {
					out = append(out, encrypted.Prefix{Prefix: apiserver.StoragePrefix(res), Transformer: t})
				}
			}
		case gr.Resource == "*":
			out = append(out, encrypted.Prefix{Prefix: "/registry/" + gr.Group + "/", Transformer: t})
		case gr.Group == "":
			out = append(out, encrypted.Prefix{Prefix: "/registry/" + gr.Resource + "/", Transformer: t})
		default:
			out = append(out, encrypted.Prefix{Prefix: "/registry/" + gr.Group + "/" + gr.Resource + "/", Transformer: t})
		}
	}
	return out
}
