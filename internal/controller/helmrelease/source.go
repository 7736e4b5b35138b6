package helmrelease

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/downloader"
	"helm.sh/helm/v4/pkg/getter"
	"helm.sh/helm/v4/pkg/registry"
	repo "helm.sh/helm/v4/pkg/repo/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"
)

// desired is the chart and values a HelmRelease asks for, and their digest.
type desired struct {
	chart  *chart.Chart
	values map[string]any
	digest string
}

// sources reads charts and values: from the server's files, ConfigMaps and
// Secrets (through the API server), HTTP repositories and OCI registries
// (downloads kept in cacheDir by their digest).
type sources struct {
	client   kubernetes.Interface
	cacheDir string
}

// desired loads what hr asks for. Its errors are the user's to fix (a
// missing key, a chart that does not load, values that are not YAML).
func (s *sources) desired(ctx context.Context, hr *HelmRelease) (*desired, error) {
	archive, dir, err := s.chartBytes(ctx, hr)
	if err != nil {
		return nil, err
	}
	var ch *chart.Chart
	h := sha256.New()
	if dir != "" {
		if ch, err = loader.LoadDir(dir); err != nil {
			return nil, fmt.Errorf("loading the chart in %s: %w", dir, err)
		}
		if err := hashDir(h, dir); err != nil {
			return nil, err
		}
	} else {
		if ch, err = loader.LoadArchive(bytes.NewReader(archive)); err != nil {
			return nil, fmt.Errorf("loading the chart archive: %w", err)
		}
		h.Write(archive)
	}
	values, err := s.values(ctx, hr)
	if err != nil {
		return nil, err
	}
	encoded, err := json.Marshal(values) // map keys sorted: a stable digest
	if err != nil {
		return nil, err
	}
	h.Write([]byte{0})
	h.Write(encoded)
	return &desired{chart: ch, values: values, digest: "sha256:" + hex.EncodeToString(h.Sum(nil))}, nil
}

// chartBytes is the chart as an archive, or the directory it is in.
func (s *sources) chartBytes(ctx context.Context, hr *HelmRelease) (archive []byte, dir string, err error) {
	src := hr.Spec.Chart
	switch {
	case src.Path != "":
		info, err := os.Stat(src.Path)
		if err != nil {
			return nil, "", fmt.Errorf("chart path: %w", err)
		}
		if info.IsDir() {
			return nil, src.Path, nil
		}
		b, err := os.ReadFile(src.Path)
		return b, "", err
	case src.ConfigMapRef != nil:
		cm, err := s.client.CoreV1().ConfigMaps(hr.Namespace).Get(ctx, src.ConfigMapRef.Name, metav1.GetOptions{})
		if err != nil {
			return nil, "", fmt.Errorf("chart: %w", err)
		}
		if b, ok := cm.BinaryData[src.ConfigMapRef.Key]; ok {
			return b, "", nil
		}
		if v, ok := cm.Data[src.ConfigMapRef.Key]; ok {
			return []byte(v), "", nil
		}
		return nil, "", fmt.Errorf("chart: ConfigMap %s has no key %q", src.ConfigMapRef.Name, src.ConfigMapRef.Key)
	case src.SecretRef != nil:
		secret, err := s.client.CoreV1().Secrets(hr.Namespace).Get(ctx, src.SecretRef.Name, metav1.GetOptions{})
		if err != nil {
			return nil, "", fmt.Errorf("chart: %w", err)
		}
		b, ok := secret.Data[src.SecretRef.Key]
		if !ok {
			return nil, "", fmt.Errorf("chart: Secret %s has no key %q", src.SecretRef.Name, src.SecretRef.Key)
		}
		return b, "", nil
	case src.RepoURL != "" || src.OCI != "":
		b, err := s.download(hr)
		return b, "", err
	}
	return nil, "", fmt.Errorf("spec.chart names no chart")
}

// download fetches a repository's or registry's chart, or takes it from
// the cache (cacheDir/content) by the digest the repository's index or
// the registry gives.
func (s *sources) download(hr *HelmRelease) ([]byte, error) {
	src := hr.Spec.Chart
	opts := []registry.ClientOption{registry.ClientOptWriter(io.Discard)}
	if src.PlainHTTP {
		opts = append(opts, registry.ClientOptPlainHTTP())
	}
	rc, err := registry.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	getterOpts := []getter.Option{getter.WithRegistryClient(rc), getter.WithPlainHTTP(src.PlainHTTP)}
	getters := getter.Getters(getterOpts...)
	cache := &downloader.DiskCache{Root: filepath.Join(s.cacheDir, "content")}
	if src.RepoURL != "" {
		return s.fromRepository(src.RepoURL, src.Name, hr.Spec.Version, getters, cache)
	}
	d := &downloader.ChartDownloader{Out: io.Discard, Getters: getters, Options: getterOpts, RegistryClient: rc, Cache: cache}
	path, _, err := d.DownloadToCache(src.OCI, hr.Spec.Version)
	if err != nil {
		return nil, err
	}
	return os.ReadFile(path)
}

// fromRepository reads the HTTP repository's index.yaml, picks the chart
// version, and takes its archive from the cache by the index's digest or
// downloads it.
func (s *sources) fromRepository(repoURL, name, version string, getters getter.Providers, cache *downloader.DiskCache) ([]byte, error) {
	indexURL := strings.TrimSuffix(repoURL, "/") + "/index.yaml"
	g, err := getters.ByScheme("http")
	if err != nil {
		return nil, err
	}
	body, err := g.Get(indexURL)
	if err != nil {
		return nil, fmt.Errorf("the chart repository %s cannot be read: %w", repoURL, err)
	}
	if err := os.MkdirAll(s.cacheDir, 0o700); err != nil {
		return nil, err
	}
	indexFile, err := os.CreateTemp(s.cacheDir, "index-*.yaml")
	if err != nil {
		return nil, err
	}
	defer os.Remove(indexFile.Name())
	if _, err := indexFile.Write(body.Bytes()); err != nil {
		indexFile.Close()
		return nil, err
	}
	indexFile.Close()
	index, err := repo.LoadIndexFile(indexFile.Name())
	if err != nil {
		return nil, fmt.Errorf("the chart repository %s: %w", repoURL, err)
	}
	cv, err := index.Get(name, version)
	if err != nil {
		return nil, fmt.Errorf("chart %q version %q is not in the repository %s", name, version, repoURL)
	}
	if len(cv.URLs) == 0 {
		return nil, fmt.Errorf("chart %s-%s has no URL in the repository %s", name, cv.Version, repoURL)
	}
	var key [sha256.Size]byte
	if digest, err := hex.DecodeString(cv.Digest); err == nil && len(digest) == sha256.Size {
		copy(key[:], digest)
		if path, err := cache.Get(key, downloader.CacheChart); err == nil {
			return os.ReadFile(path)
		}
	}
	chartURL, err := repo.ResolveReferenceURL(repoURL, cv.URLs[0])
	if err != nil {
		return nil, err
	}
	data, err := g.Get(chartURL)
	if err != nil {
		return nil, fmt.Errorf("downloading %s: %w", chartURL, err)
	}
	b := data.Bytes()
	sum := sha256.Sum256(b)
	if cv.Digest != "" && hex.EncodeToString(sum[:]) != cv.Digest {
		return nil, fmt.Errorf("%s: its digest is not the one the repository's index gives", chartURL)
	}
	if _, err := cache.Put(sum, bytes.NewReader(b), downloader.CacheChart); err != nil {
		return nil, err
	}
	return b, nil
}

// values merges spec.valuesFrom in order, then spec.values over them.
func (s *sources) values(ctx context.Context, hr *HelmRelease) (map[string]any, error) {
	merged := map[string]any{}
	for _, ref := range hr.Spec.ValuesFrom {
		key := ref.Key
		if key == "" {
			key = "values.yaml"
		}
		var text []byte
		var found bool
		switch ref.Kind {
		case "ConfigMap":
			cm, err := s.client.CoreV1().ConfigMaps(hr.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
			if err == nil {
				var v string
				v, found = cm.Data[key]
				text = []byte(v)
			} else if !apierrors.IsNotFound(err) {
				return nil, err
			}
		case "Secret":
			secret, err := s.client.CoreV1().Secrets(hr.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
			if err == nil {
				text, found = secret.Data[key]
			} else if !apierrors.IsNotFound(err) {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("valuesFrom: kind %q is neither ConfigMap nor Secret", ref.Kind)
		}
		if !found {
			if ref.Optional {
				continue
			}
			return nil, fmt.Errorf("valuesFrom: %s %s has no key %q", ref.Kind, ref.Name, key)
		}
		var v map[string]any
		if err := yaml.Unmarshal(text, &v); err != nil {
			return nil, fmt.Errorf("valuesFrom: %s %s key %q: %w", ref.Kind, ref.Name, key, err)
		}
		mergeValues(merged, v)
	}
	mergeValues(merged, hr.Spec.Values)
	return merged, nil
}

// mergeValues merges src into dst: maps key by key, anything else
// replaced.
func mergeValues(dst, src map[string]any) {
	for k, v := range src {
		if vm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				mergeValues(dm, vm)
				continue
			}
			copied := map[string]any{}
			mergeValues(copied, vm)
			v = copied
		}
		dst[k] = v
	}
}

// hashDir writes each regular file's path and contents under dir, in
// order, to h.
func hashDir(h io.Writer, dir string) error {
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, f)
		fmt.Fprintf(h, "%s\x00%d\x00", rel, len(b))
		h.Write(b)
	}
	return nil
}
