package testenv

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	aeclientset "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// CRDTimeout bounds how long InstallCRDs waits for the CRDs to be
// established and served.
const CRDTimeout = 30 * time.Second

// WithCRDs installs the CustomResourceDefinitions found in paths before Start
// returns, as envtest's CRDDirectoryPaths does: each path is a file or a
// directory whose *.yaml, *.yml and *.json files are read (not recursively);
// a file may hold several YAML documents, and documents that are not
// apiextensions.k8s.io/v1 CustomResourceDefinitions (a kustomization.yaml,
// say) are skipped. Relative paths are relative to the test's package
// directory. A missing path fails the test.
//
// Start returns once every CRD is Established and its resources are in
// discovery. The CRDs are installed before the in-process components start,
// so the garbage collector and the namespace controller know the new kinds
// from their first discovery.
func WithCRDs(paths ...string) Option {
	return func(o *options) { o.crdPaths = append(o.crdPaths, paths...) }
}

// WithCRDObjects installs the given CRDs as WithCRDs does with files (like
// envtest's CRDs field).
func WithCRDObjects(crds ...*apiextensionsv1.CustomResourceDefinition) Option {
	return func(o *options) { o.crds = append(o.crds, crds...) }
}

// ReadCRDs reads CustomResourceDefinitions from files and directories as
// WithCRDs describes. With errorIfMissing false a path that does not exist
// is skipped (envtest's default); otherwise it is an error.
func ReadCRDs(errorIfMissing bool, paths ...string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, p := range paths {
		fi, err := os.Stat(p)
		if errors.Is(err, os.ErrNotExist) && !errorIfMissing {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("CRD path: %w", err)
		}
		files := []string{p}
		if fi.IsDir() {
			entries, err := os.ReadDir(p)
			if err != nil {
				return nil, err
			}
			files = files[:0]
			for _, e := range entries {
				switch strings.ToLower(filepath.Ext(e.Name())) {
				case ".yaml", ".yml", ".json":
					if !e.IsDir() {
						files = append(files, filepath.Join(p, e.Name()))
					}
				}
			}
		}
		for _, f := range files {
			crds, err := readCRDFile(f)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			out = append(out, crds...)
		}
	}
	return out, nil
}

func readCRDFile(path string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			return nil, err
		}
		if tm.Kind != "CustomResourceDefinition" {
			continue
		}
		if tm.APIVersion != apiextensionsv1.SchemeGroupVersion.String() {
			return nil, fmt.Errorf("CustomResourceDefinition in %s: only %s is served", tm.APIVersion, apiextensionsv1.SchemeGroupVersion)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(doc, crd); err != nil {
			return nil, err
		}
		out = append(out, crd)
	}
}

// InstallCRDs creates the CRDs (or updates those that exist) and waits,
// up to CRDTimeout or ctx's end, until each is Established and every served
// version's resource is listed by discovery.
func InstallCRDs(ctx context.Context, cfg *rest.Config, crds ...*apiextensionsv1.CustomResourceDefinition) error {
	cs, err := aeclientset.NewForConfig(cfg)
	if err != nil {
		return err
	}
	api := cs.ApiextensionsV1().CustomResourceDefinitions()
	for _, crd := range crds {
		crd = crd.DeepCopy()
		crd.ResourceVersion = ""
		_, err := api.Create(ctx, crd, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			err = updateCRD(ctx, cs, crd)
		}
		if err != nil {
			return fmt.Errorf("installing CRD %s: %w", crd.Name, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, CRDTimeout)
	defer cancel()
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	for _, crd := range crds {
		err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			got, err := api.Get(ctx, crd.Name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			for _, c := range got.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s not established: %w", crd.Name, err)
		}
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			gv := crd.Spec.Group + "/" + v.Name
			err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(ctx context.Context) (bool, error) {
				rl, err := dc.ServerResourcesForGroupVersion(gv)
				if err != nil {
					return false, nil
				}
				return slices.ContainsFunc(rl.APIResources, func(r metav1.APIResource) bool { return r.Name == crd.Spec.Names.Plural }), nil
			})
			if err != nil {
				return fmt.Errorf("CRD %s: %s not in discovery of %s: %w", crd.Name, crd.Spec.Names.Plural, gv, err)
			}
		}
	}
	return nil
}

func updateCRD(ctx context.Context, cs aeclientset.Interface, crd *apiextensionsv1.CustomResourceDefinition) error {
	api := cs.ApiextensionsV1().CustomResourceDefinitions()
	for range 5 {
		cur, err := api.Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		crd.ResourceVersion = cur.ResourceVersion
		if _, err = api.Update(ctx, crd, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
			return err
		}
	}
	return fmt.Errorf("updating CRD %s: too many conflicts", crd.Name)
}
