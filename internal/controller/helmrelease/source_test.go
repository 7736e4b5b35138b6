package helmrelease

import (
	"context"
	"os"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestDesired reads one chart from each local source (a directory, an
// archive on disk, a ConfigMap and a Secret key) with values merged from
// valuesFrom and values, and checks the digest follows what was read.
func TestDesired(t *testing.T) {
	ch, err := loader.LoadDir("testdata/tiny")
	if err != nil {
		t.Fatal(err)
	}
	archivePath, err := chartutil.Save(ch, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	archive, err := os.ReadFile(archivePath)
	if err != nil {
		t.Fatal(err)
	}
	client := fake.NewClientset(
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "chart"}, BinaryData: map[string][]byte{"tiny.tgz": archive}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "chart"}, Data: map[string][]byte{"tiny.tgz": archive,
			"values.yaml": []byte("greeting: from-secret\nnested: {b: 3}\n")}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "values"}, Data: map[string]string{
			"values.yaml": "greeting: from-configmap\nnested: {a: 10}\n"}},
	)
	s := &sources{client: client, cacheDir: t.TempDir()}
	ctx := context.Background()
	release := func(src ChartSource, from []ValuesReference, values map[string]any) *HelmRelease {
		return &HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r"}, Spec: Spec{Chart: src, ValuesFrom: from, Values: values}}
	}
	from := []ValuesReference{{Kind: "ConfigMap", Name: "values"}, {Kind: "Secret", Name: "chart"}, {Kind: "ConfigMap", Name: "gone", Optional: true}}
	digests := map[string]string{}
	for name, src := range map[string]ChartSource{
		"directory": {Path: "testdata/tiny"},
		"archive":   {Path: archivePath},
		"configmap": {ConfigMapRef: &KeyRef{Name: "chart", Key: "tiny.tgz"}},
		"secret":    {SecretRef: &KeyRef{Name: "chart", Key: "tiny.tgz"}},
	} {
		d, err := s.desired(ctx, release(src, from, map[string]any{"extra": true}))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if d.chart.Name() != "tiny" || d.chart.Metadata.Version != "1.2.3" {
			t.Errorf("%s: chart %s-%s", name, d.chart.Name(), d.chart.Metadata.Version)
		}
		// valuesFrom in order (the Secret over the ConfigMap, map by map),
		// then values.
		nested := d.values["nested"].(map[string]any)
		if d.values["greeting"] != "from-secret" || d.values["extra"] != true || nested["a"] != float64(10) || nested["b"] != float64(3) {
			t.Errorf("%s: values %v", name, d.values)
		}
		digests[name] = d.digest
	}
	if digests["archive"] != digests["configmap"] || digests["configmap"] != digests["secret"] {
		t.Errorf("one archive, three digests: %v", digests)
	}
	other, err := s.desired(ctx, release(ChartSource{Path: archivePath}, from, map[string]any{"extra": false}))
	if err != nil {
		t.Fatal(err)
	}
	if other.digest == digests["archive"] {
		t.Errorf("other values, same digest")
	}

	for _, bad := range []struct {
		src  ChartSource
		from []ValuesReference
		want string
	}{
		{ChartSource{ConfigMapRef: &KeyRef{Name: "chart", Key: "nope"}}, nil, `ConfigMap chart has no key "nope"`},
		{ChartSource{SecretRef: &KeyRef{Name: "missing", Key: "k"}}, nil, `"missing" not found`},
		{ChartSource{Path: "testdata/none"}, nil, "no such file"},
		{ChartSource{Path: "testdata/tiny"}, []ValuesReference{{Kind: "ConfigMap", Name: "gone"}}, `ConfigMap gone has no key "values.yaml"`},
		{ChartSource{ConfigMapRef: &KeyRef{Name: "values", Key: "values.yaml"}}, nil, "loading the chart archive"},
	} {
		if _, err := s.desired(ctx, release(bad.src, bad.from, nil)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%+v: error %v, want %q", bad.src, err, bad.want)
		}
	}
}

// TestCRD: the embedded definition decodes strictly and prints the columns
// kubectl get helmreleases shows.
func TestCRD(t *testing.T) {
	crd, err := CRD()
	if err != nil {
		t.Fatal(err)
	}
	var columns []string
	for _, c := range crd.Spec.Versions[0].AdditionalPrinterColumns {
		if c.Priority == 0 {
			columns = append(columns, c.Name)
		}
	}
	if got := strings.Join(columns, " "); got != "Chart Version Revision Ready Status Age" {
		t.Errorf("columns: %s", got)
	}
}
