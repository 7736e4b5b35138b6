package volumes

import (
	"bytes"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
)

// ClusterTrustBundle projections, as upstream's kubelet: one bundle by
// name, or every bundle of a signer whose labels match a selector (a nil
// selector matches none, an empty one all). The file holds their
// certificates, each once, in the order of their DER bytes (stable
// across refreshes), as plain PEM blocks. A missing bundle, or a signer
// and selector matching none, is an error unless the source is
// optional; then the file is empty. The file is rewritten with the
// volume's other API content (every resync), so bundle changes appear.

// maxLabelSelectorLength is upstream's bound on a selector's text.
const maxLabelSelectorLength = 100 * 1024

// trustBundleAnchors is the PEM of the certificates src selects.
func trustBundleAnchors(src *corev1.ClusterTrustBundleProjection, objs volumeObjects) ([]byte, error) {
	optional := ptr.Deref(src.Optional, false)
	switch {
	case src.Name != nil:
		ctb, err := objs.TrustBundle(*src.Name)
		if apierrors.IsNotFound(err) && optional {
			return []byte{}, nil
		}
		if err != nil {
			return nil, fmt.Errorf("while getting ClusterTrustBundle: %w", err)
		}
		return normalizeTrustAnchors([]certificatesv1.ClusterTrustBundle{*ctb}), nil
	case src.SignerName != nil:
		sel, err := metav1.LabelSelectorAsSelector(src.LabelSelector)
		if err != nil {
			return nil, fmt.Errorf("while parsing label selector: %w", err)
		}
		if n := len(sel.String()); n > maxLabelSelectorLength {
			return nil, fmt.Errorf("label selector length (%d) is larger than %d", n, maxLabelSelectorLength)
		}
		var matched []certificatesv1.ClusterTrustBundle
		if src.LabelSelector != nil { // nil selects nothing
			all, err := objs.TrustBundles(*src.SignerName)
			if err != nil {
				return nil, fmt.Errorf("while listing ClusterTrustBundles matching label selector %v: %w", src.LabelSelector, err)
			}
			for _, ctb := range all {
				if ctb.Spec.SignerName == *src.SignerName && sel.Matches(labels.Set(ctb.Labels)) {
					matched = append(matched, ctb)
				}
			}
		}
		if len(matched) == 0 {
			if optional {
				return []byte{}, nil
			}
			return nil, errors.New("combination of signerName and labelSelector matched zero ClusterTrustBundles")
		}
		return normalizeTrustAnchors(matched), nil
	}
	return nil, errors.New("ClusterTrustBundle projection requires either name or signerName to be set")
}

// normalizeTrustAnchors joins the bundles' certificates, each once,
// sorted by their DER bytes, without headers or text between blocks.
func normalizeTrustAnchors(ctbs []certificatesv1.ClusterTrustBundle) []byte {
	var ders [][]byte
	for _, ctb := range ctbs {
		rest := []byte(ctb.Spec.TrustBundle)
		for {
			var b *pem.Block
			if b, rest = pem.Decode(rest); b == nil {
				break
			}
			ders = append(ders, b.Bytes)
		}
	}
	slices.SortFunc(ders, bytes.Compare)
	ders = slices.CompactFunc(ders, bytes.Equal)
	out := []byte{}
	for _, d := range ders {
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: d})...)
	}
	return out
}
