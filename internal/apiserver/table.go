package apiserver

import (
	"bytes"
	"sort"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"plainkube.dev/plainkube/internal/registry"
)

// defaultTable is what kinds without a printer show: NAME and CREATED AT.
var defaultTable = &registry.TableSpec{
	Columns: []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name", Description: "Name must be unique within a namespace."},
		{Name: "Created At", Type: "date", Description: "CreationTimestamp is a timestamp representing the server time when this object was created."},
	},
	Cells: func(obj runtime.Object) []interface{} {
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil
		}
		return []interface{}{m.GetName(), m.GetCreationTimestamp().UTC().Format("2006-01-02T15:04:05Z")}
	},
}

// toTable renders obj (an object or a list) as a meta.k8s.io/v1 Table with
// the resource's columns; rows carry the object as includeObject asks
// (Metadata by default).
func (s *Server) toTable(rq *request, obj runtime.Object, withColumns bool) (*metav1.Table, error) {
	spec := rq.rs.res.Strategy.Table
	if rq.info.Subresource == "scale" {
		spec = s.cfg.ScaleTable
	}
	if spec == nil {
		spec = defaultTable
	}
	include := metav1.IncludeObjectPolicy(rq.r.URL.Query().Get("includeObject"))
	if include == "" {
		include = metav1.IncludeMetadata
	}
	if include != metav1.IncludeNone && include != metav1.IncludeMetadata && include != metav1.IncludeObject {
		return nil, badRequest("includeObject must be one of None, Metadata, Object")
	}
	table := &metav1.Table{TypeMeta: metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"}}
	if withColumns {
		table.ColumnDefinitions = spec.Columns
	}
	addRow := func(item runtime.Object) error {
		row := metav1.TableRow{Cells: spec.Cells(item)}
		var buf bytes.Buffer
		switch include {
		case metav1.IncludeMetadata:
			if err := s.codecs.json.Encode(partialMetadata(item), &buf); err != nil {
				return err
			}
			row.Object.Raw = bytes.TrimSpace(buf.Bytes())
		case metav1.IncludeObject:
			if err := s.codecs.json.Encode(item, &buf); err != nil {
				return err
			}
			row.Object.Raw = bytes.TrimSpace(buf.Bytes())
		}
		table.Rows = append(table.Rows, row)
		return nil
	}
	if meta.IsListType(obj) {
		if lm, err := meta.ListAccessor(obj); err == nil {
			table.ResourceVersion, table.Continue, table.RemainingItemCount = lm.GetResourceVersion(), lm.GetContinue(), lm.GetRemainingItemCount()
		}
		var items []runtime.Object
		if err := meta.EachListItem(obj, func(item runtime.Object) error {
			items = append(items, item)
			return nil
		}); err != nil {
			return nil, err
		}
		if spec.Less != nil {
			sort.SliceStable(items, func(i, j int) bool { return spec.Less(items[i], items[j]) })
		}
		for _, item := range items {
			if err := addRow(item); err != nil {
				return nil, err
			}
		}
	} else {
		if m, err := meta.Accessor(obj); err == nil {
			table.ResourceVersion = m.GetResourceVersion()
		}
		if err := addRow(obj); err != nil {
			return nil, err
		}
	}
	if table.Rows == nil {
		table.Rows = []metav1.TableRow{}
	}
	return table, nil
}
