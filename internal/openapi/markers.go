package openapi

//go:generate go run gen_markers.go

// fieldMarkers are the comment markers of one k8s.io/api struct field
// that upstream's generator reads and the compiled types lose (see
// gen_markers.go, which writes apiMarkers from k8s.io/api's source).
type fieldMarkers struct {
	// required: +required on a field with omitempty (upstream makes it
	// required); optional: +optional on a field without (not required).
	required, optional bool
	listType           string
	listMapKeys        []string
	mapType            string
}

// unionMarkers are a struct's +union markers: the +unionDiscriminator
// field ("" without one) and the other fields' JSON names with their Go
// names, as upstream's x-kubernetes-unions gives them.
type unionMarkers struct {
	discriminator string
	members       map[string]string
}

// extension is the x-kubernetes-unions value.
func (u unionMarkers) extension() []any {
	by := map[string]any{}
	for k, v := range u.members {
		by[k] = v
	}
	entry := map[string]any{"fields-to-discriminateBy": by}
	if u.discriminator != "" {
		entry["discriminator"] = u.discriminator
	}
	return []any{entry}
}
