package apiserver

import (
	"bytes"
	"fmt"
	"mime"
	"net/http"

	jsonpatch "github.com/evanphx/json-patch/v5"
	jsonpatchv4 "gopkg.in/evanphx/json-patch.v4"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"plainkube.dev/plainkube/internal/registry"
)

// handlePatch applies a JSON patch, JSON merge patch or strategic merge patch
// to the stored object and updates it through updateObject. A patch that
// names no resourceVersion is retried on conflicts with concurrent writers.
func (s *Server) handlePatch(rq *request, subresource string) error {
	ctx := rq.r.Context()
	dryRun, err := parseDryRun(rq.r.URL.Query()["dryRun"])
	if err != nil {
		return err
	}
	fv, err := parseFieldValidation(rq.r)
	if err != nil {
		return err
	}
	ct, _, err := mime.ParseMediaType(rq.r.Header.Get("Content-Type"))
	if err != nil {
		return unsupportedMediaType(rq.r.Header.Get("Content-Type"))
	}
	pt := types.PatchType(ct)
	switch pt {
	case types.StrategicMergePatchType:
		if rq.rs.cr != nil {
			return unsupportedPatchType(customPatchTypes)
		}
	case types.JSONPatchType, types.MergePatchType:
	case types.ApplyYAMLPatchType:
		return s.handleApply(rq, subresource, dryRun, fv)
	default:
		if rq.rs.cr != nil {
			return unsupportedPatchType(customPatchTypes)
		}
		return unsupportedMediaType(ct)
	}
	patch, err := s.readBody(rq.r)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(patch)) == 0 {
		return badRequest("the body of the request was empty")
	}
	manager, err := fieldManagerName(rq.r, false)
	if err != nil {
		return err
	}
	var warnings []string
	rs := rq.rs
	updated, err := s.updateObject(ctx, rs, rq.info.Namespace, rq.info.Name, subresource, writeOptions{dryRun: dryRun, manager: manager}, func(current runtime.Object) (runtime.Object, error) {
		var buf bytes.Buffer
		if err := s.codecs.json.Encode(current, &buf); err != nil {
			return nil, err
		}
		patched, err := applyPatch(pt, buf.Bytes(), patch, rs.newObject())
		if err != nil {
			return nil, err
		}
		obj, w, err := s.decodePatched(rs, patched, fv)
		if err != nil {
			return nil, err
		}
		warnings = w
		m, cm := metaOf(obj), metaOf(current)
		if m.GetName() != cm.GetName() {
			return nil, badRequest("the name of the object (%s) does not match the name on the URL (%s)", m.GetName(), cm.GetName())
		}
		if m.GetResourceVersion() == cm.GetResourceVersion() {
			m.SetResourceVersion("") // the patch did not ask for a precondition
		}
		return obj, nil
	})
	if err != nil {
		return err
	}
	addWarnings(rq.w, warnings)
	s.writeResult(rq, http.StatusOK, updated)
	return nil
}

// Upstream's bounds on a JSON patch: how many operations, and how much
// its copy operations may grow the object (twice the largest request,
// 3 MiB), so that a small patch cannot copy a document into gigabytes.
const (
	maxJSONPatchOperations = 10000
	maxJSONPatchCopyBytes  = 3 << 20
)

func init() { jsonpatchv4.AccumulatedCopySizeLimit = maxJSONPatchCopyBytes }

func applyPatch(pt types.PatchType, original, patch []byte, schema runtime.Object) ([]byte, error) {
	switch pt {
	case types.JSONPatchType:
		// json-patch v4, as upstream's API server: its "replace" of an
		// absent object member sets it (v5 follows RFC 6902 and refuses),
		// which clients rely on — the CSI snapshot controller binds a
		// pre-provisioned VolumeSnapshotContent by replacing
		// /spec/volumeSnapshotRef/uid before it is set.
		p, err := jsonpatchv4.DecodePatch(patch)
		if err != nil {
			return nil, badRequest("error decoding json patch: %v", err)
		}
		if len(p) > maxJSONPatchOperations {
			return nil, registry.NewStatusError(http.StatusRequestEntityTooLarge, metav1.StatusReasonRequestEntityTooLarge,
				fmt.Sprintf("Request entity too large: The allowed maximum operations in a JSON patch is %d, got %d", maxJSONPatchOperations, len(p)))
		}
		out, err := p.Apply(original)
		if err != nil {
			return nil, registry.NewStatusError(http.StatusUnprocessableEntity, metav1.StatusReasonInvalid, fmt.Sprintf("the server rejected our request due to an error in our request: %v", err))
		}
		return out, nil
	case types.MergePatchType:
		out, err := jsonpatch.MergePatch(original, patch)
		if err != nil {
			return nil, badRequest("error applying merge patch: %v", err)
		}
		return out, nil
	default:
		out, err := strategicpatch.StrategicMergePatch(original, patch, schema)
		if err != nil {
			return nil, badRequest("error applying strategic merge patch: %v", err)
		}
		return out, nil
	}
}
