package apiserver

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// readBody reads a request body of at most the configured size (413 beyond).
func (s *Server) readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	limit := s.cfg.MaxRequestBodyBytes
	data, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return nil, badRequest("reading request body: %v", err)
	}
	if int64(len(data)) > limit {
		return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", limit))
	}
	return data, nil
}

// fieldValidation is the fieldValidation query parameter: how unknown and
// duplicate fields in a body are treated.
type fieldValidation string

const (
	validationIgnore fieldValidation = "Ignore"
	validationWarn   fieldValidation = "Warn"
	validationStrict fieldValidation = "Strict"
)

func parseFieldValidation(r *http.Request) (fieldValidation, error) {
	switch v := r.URL.Query().Get("fieldValidation"); v {
	case "":
		return validationWarn, nil
	case "Ignore", "Warn", "Strict":
		return fieldValidation(v), nil
	default:
		return "", badRequest("fieldValidation parameter unsupported: %q (must be one of: Ignore, Warn, Strict)", v)
	}
}

// decodeBody decodes a create or update body into an object of gvk. A body
// without apiVersion and kind takes them from the URL; a body naming another
// group, version or kind is rejected. Unknown and duplicate fields fail the
// request under Strict and become warnings under Warn.
func (s *Server) decodeBody(r *http.Request, data []byte, gvk schema.GroupVersionKind, into runtime.Object, fv fieldValidation) (runtime.Object, []string, error) {
	if len(strings.TrimSpace(string(data))) == 0 {
		return nil, nil, badRequest("the body of the request was empty")
	}
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		ct = mediaJSON
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return nil, nil, unsupportedMediaType(ct)
	}
	var dec runtime.Decoder
	strict := fv != validationIgnore
	switch mt {
	case mediaJSON:
		dec = s.codecs.json
		if strict {
			dec = s.codecs.strictJSON
		}
	case mediaYAML, "application/x-yaml", "text/yaml":
		dec = s.codecs.yaml
		if strict {
			dec = s.codecs.strictYAML
		}
	case mediaProtobuf:
		info, _ := s.codecs.serializerFor(mediaProtobuf)
		dec = info.Serializer
	default:
		return nil, nil, unsupportedMediaType(ct)
	}
	return decodeInto(dec, data, gvk, into, fv)
}

// decodeObject decodes a create or update body into an object of the
// request's resource. Custom objects are then pruned of the fields their
// schema does not declare, which are reported as fieldValidation asks; they
// are never protobuf (415, as upstream).
func (s *Server) decodeObject(rq *request, data []byte, fv fieldValidation) (runtime.Object, []string, error) {
	rs := rq.rs
	if rs.cr == nil {
		return s.decodeBody(rq.r, data, rs.res.Kind, rs.newObject(), fv)
	}
	if mt, _, _ := mime.ParseMediaType(rq.r.Header.Get("Content-Type")); mt == mediaProtobuf {
		return nil, nil, unsupportedPatchType([]string{mediaJSON, mediaYAML})
	}
	obj, warnings, err := s.decodeBody(rq.r, data, rs.res.Kind, &unstructured.Unstructured{}, fv)
	if err != nil {
		return nil, nil, err
	}
	warnings, err = rs.coerceCustom(obj.(*unstructured.Unstructured), fv, warnings)
	if err != nil {
		return nil, nil, err
	}
	return obj, warnings, nil
}

// decodePatched decodes the JSON result of a patch into an object of rs.
func (s *Server) decodePatched(rs *resourceStore, data []byte, fv fieldValidation) (runtime.Object, []string, error) {
	dec := s.codecs.json
	if fv != validationIgnore {
		dec = s.codecs.strictJSON
	}
	if rs.cr == nil {
		return decodeInto(dec, data, rs.res.Kind, rs.newObject(), fv)
	}
	obj, warnings, err := decodeInto(dec, data, rs.res.Kind, &unstructured.Unstructured{}, fv)
	if err != nil {
		return nil, nil, err
	}
	warnings, err = rs.coerceCustom(obj.(*unstructured.Unstructured), fv, warnings)
	if err != nil {
		return nil, nil, err
	}
	return obj, warnings, nil
}

func decodeInto(dec runtime.Decoder, data []byte, gvk schema.GroupVersionKind, into runtime.Object, fv fieldValidation) (runtime.Object, []string, error) {
	obj, got, err := dec.Decode(data, &gvk, into)
	var warnings []string
	if err != nil {
		strictErr, isStrict := runtime.AsStrictDecodingError(err)
		if !isStrict || obj == nil {
			if runtime.IsNotRegisteredError(err) || runtime.IsMissingKind(err) || runtime.IsMissingVersion(err) {
				return nil, nil, badRequest("%v", err)
			}
			return nil, nil, badRequest("error decoding request body: %v", err)
		}
		switch fv {
		case validationStrict:
			return nil, nil, badRequest("%s", strictErr.Error())
		case validationWarn:
			for _, e := range strictErr.Errors() {
				warnings = append(warnings, e.Error())
			}
		}
	}
	if got.Group != gvk.Group || got.Version != gvk.Version {
		return nil, nil, badRequest("the API version in the data (%s) does not match the expected API version (%s)", got.GroupVersion(), gvk.GroupVersion())
	}
	if got.Kind != gvk.Kind {
		return nil, nil, badRequest("the kind in the data (%s) does not match the expected kind (%s)", got.Kind, gvk.Kind)
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return obj, warnings, nil
}

// addWarnings sets the Warning headers a client prints.
func addWarnings(w http.ResponseWriter, warnings []string) {
	for _, msg := range warnings {
		w.Header().Add("Warning", fmt.Sprintf("299 - %q", msg))
	}
}

// decodeOptions decodes an options body (DeleteOptions) of any meta version.
func (s *Server) decodeDeleteOptions(r *http.Request) (*metav1.DeleteOptions, error) {
	opts := &metav1.DeleteOptions{}
	data, err := s.readBody(r)
	if err != nil {
		return nil, err
	}
	if len(strings.TrimSpace(string(data))) > 0 {
		gvk := metav1.SchemeGroupVersion.WithKind("DeleteOptions")
		dec := s.codecs.json
		if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt == mediaProtobuf {
			info, _ := s.codecs.serializerFor(mediaProtobuf)
			obj, _, err := info.Serializer.Decode(data, &gvk, opts)
			if err != nil {
				return nil, badRequest("error decoding DeleteOptions: %v", err)
			}
			opts = obj.(*metav1.DeleteOptions)
		} else if _, _, err := dec.Decode(data, &gvk, opts); err != nil {
			// DeleteOptions may come in any group version: clients such as
			// controller-runtime send the resource's own, a custom
			// resource's group/version included (upstream registers
			// DeleteOptions unversioned in each CRD's parameter scheme).
			var tm metav1.TypeMeta
			if !runtime.IsNotRegisteredError(err) || json.Unmarshal(data, &tm) != nil || tm.Kind != "DeleteOptions" {
				return nil, badRequest("error decoding DeleteOptions: %v", err)
			}
			*opts = metav1.DeleteOptions{}
			if err := json.Unmarshal(data, opts); err != nil {
				return nil, badRequest("error decoding DeleteOptions: %v", err)
			}
		}
	}
	q := r.URL.Query()
	if v := q.Get("gracePeriodSeconds"); v != "" {
		var n int64
		if _, err := fmt.Sscan(v, &n); err != nil {
			return nil, badRequest("invalid gracePeriodSeconds %q", v)
		}
		opts.GracePeriodSeconds = &n
	}
	if v := q.Get("propagationPolicy"); v != "" {
		p := metav1.DeletionPropagation(v)
		opts.PropagationPolicy = &p
	}
	if v := q.Get("orphanDependents"); v != "" {
		b := isTrue(v)
		opts.OrphanDependents = &b
	}
	if v, ok := q["dryRun"]; ok {
		opts.DryRun = v
	}
	return opts, nil
}

// parseDryRun reports whether dryRun=All was asked for.
func parseDryRun(values []string) (bool, error) {
	for _, v := range values {
		if v != metav1.DryRunAll {
			return false, badRequest("unsupported dry run value %q, only %q is supported", v, metav1.DryRunAll)
		}
	}
	return len(values) > 0, nil
}
