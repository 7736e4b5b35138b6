package apiserver

import (
	"bytes"
	"context"
	stdjson "encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"plainkube.dev/plainkube/internal/registry"
	"sigs.k8s.io/yaml"
)

// Media types the server reads and writes.
const (
	mediaJSON     = "application/json"
	mediaYAML     = "application/yaml"
	mediaProtobuf = "application/vnd.kubernetes.protobuf"
)

// codecs holds the scheme of every served Go type and its serializers.
type codecs struct {
	scheme  *runtime.Scheme
	factory serializer.CodecFactory
	// json and strictJSON decode request bodies; strict reports unknown and
	// duplicate fields as runtime.StrictDecodingError while still decoding.
	json, strictJSON, yaml, strictYAML *json.Serializer
}

// scheme holds every built-in Go type plainkube serves.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := apiregistrationv1.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := metav1.AddMetaToScheme(s); err != nil {
		panic(err)
	}
	metav1.AddToGroupVersion(s, metav1.SchemeGroupVersion)
	return s
}()

// Scheme returns the scheme of every built-in served type; callers must not
// add to it.
func Scheme() *runtime.Scheme { return scheme }

func newCodecs() *codecs {
	s := scheme
	mf := json.DefaultMetaFactory
	return &codecs{
		scheme:     s,
		factory:    serializer.NewCodecFactory(s),
		json:       json.NewSerializerWithOptions(mf, s, s, json.SerializerOptions{}),
		strictJSON: json.NewSerializerWithOptions(mf, s, s, json.SerializerOptions{Strict: true}),
		yaml:       json.NewSerializerWithOptions(mf, s, s, json.SerializerOptions{Yaml: true}),
		strictYAML: json.NewSerializerWithOptions(mf, s, s, json.SerializerOptions{Yaml: true, Strict: true}),
	}
}

// outputKind is the shape of a response body beyond its media type.
type outputKind int

const (
	outputObject outputKind = iota
	outputTable
	outputPartialMetadata
)

// negotiated is the answer to a request's Accept header.
type negotiated struct {
	mediaType string
	info      runtime.SerializerInfo
	kind      outputKind
}

// negotiate picks the first acceptable media type in the Accept header,
// honouring the as=Table and as=PartialObjectMetadata(List) parameters of
// meta.k8s.io. allowTransform is false where only plain objects make sense.
func (c *codecs) negotiate(r *http.Request, allowTransform bool) (negotiated, error) {
	return c.negotiateFor(r, allowTransform, false)
}

// negotiateFor is negotiate for a resource; unstructured (custom) objects
// have no protobuf form, so protobuf is only chosen for their metadata.
func (c *codecs) negotiateFor(r *http.Request, allowTransform, unstructured bool) (negotiated, error) {
	accept := r.Header.Get("Accept")
	if accept == "" {
		accept = mediaJSON
	}
	for _, clause := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(clause))
		if err != nil {
			continue
		}
		kind := outputObject
		if as := params["as"]; as != "" {
			if !allowTransform || params["g"] != metav1.GroupName || (params["v"] != "v1" && params["v"] != "v1beta1") {
				continue
			}
			switch as {
			case "Table":
				kind = outputTable
			case "PartialObjectMetadata", "PartialObjectMetadataList":
				kind = outputPartialMetadata
			default:
				continue
			}
		}
		switch mt {
		case "*/*", "application/*":
			mt = mediaJSON
		}
		if kind == outputTable && mt != mediaJSON && mt != mediaYAML {
			continue // tables are served as JSON (and YAML) only
		}
		if unstructured && kind == outputObject && mt == mediaProtobuf {
			continue
		}
		if info, ok := c.serializerFor(mt); ok {
			return negotiated{mediaType: mt, info: info, kind: kind}, nil
		}
	}
	return negotiated{}, registry.NewStatusError(http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable, fmt.Sprintf("only the following media types are accepted: %s, %s, %s", mediaJSON, mediaYAML, mediaProtobuf))
}

func (c *codecs) serializerFor(mediaType string) (runtime.SerializerInfo, bool) {
	for _, info := range c.factory.SupportedMediaTypes() {
		if info.MediaType == mediaType {
			return info, true
		}
	}
	return runtime.SerializerInfo{}, false
}

// writeObject encodes obj (whose TypeMeta must be set) with the negotiated
// serializer.
func (c *codecs) writeObject(w http.ResponseWriter, n negotiated, code int, obj runtime.Object) {
	w.Header().Set("Content-Type", n.mediaType)
	w.WriteHeader(code)
	if err := n.info.Serializer.Encode(obj, w); err != nil {
		// Headers are gone; the client sees a truncated body.
		return
	}
}

// writeError writes err as a metav1.Status in a media type the client
// accepts (JSON when it accepts none we serve).
func (c *codecs) writeError(w http.ResponseWriter, r *http.Request, err error) {
	status := toStatus(err)
	if status.Code == http.StatusInternalServerError && errors.Is(r.Context().Err(), context.DeadlineExceeded) {
		// Whatever failed once the request's deadline passed (a storage
		// call, an admission step's read), the client is told it timed
		// out, as by upstream's timeout filter.
		status = &requestTimedOut().ErrStatus
	}
	n, nerr := c.negotiate(r, false)
	if nerr != nil || n.mediaType == mediaYAML {
		n, _ = c.negotiate(&http.Request{Header: http.Header{}}, false)
	}
	code := int(status.Code)
	if code == 0 {
		code = http.StatusInternalServerError
	}
	if code == http.StatusTooManyRequests || code == http.StatusGatewayTimeout {
		if status.Details != nil && status.Details.RetryAfterSeconds > 0 {
			w.Header().Set("Retry-After", fmt.Sprint(status.Details.RetryAfterSeconds))
		}
	}
	c.writeObject(w, n, code, status)
}

// auditJSON is body, of contentType, as JSON for the audit log: JSON as
// it is, YAML converted, protobuf decoded and encoded again; nil if it is
// none of these.
func (c *codecs) auditJSON(contentType string, body []byte) []byte {
	mt, _, _ := mime.ParseMediaType(contentType)
	switch {
	case mt == runtime.ContentTypeJSON || strings.HasSuffix(mt, "+json"):
		if stdjson.Valid(body) {
			return body
		}
	case mt == runtime.ContentTypeYAML || strings.HasSuffix(mt, "+yaml"):
		if j, err := yaml.YAMLToJSON(body); err == nil {
			return j
		}
	case mt == runtime.ContentTypeProtobuf:
		info, ok := runtime.SerializerInfoForMediaType(c.factory.SupportedMediaTypes(), mt)
		if !ok {
			return nil
		}
		obj, _, err := info.Serializer.Decode(body, nil, nil)
		if err != nil {
			return nil
		}
		var buf bytes.Buffer
		if err := c.json.Encode(obj, &buf); err == nil {
			return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
		}
	}
	return nil
}
