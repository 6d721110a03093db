package bench

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
)

// ReportSchema is the JSON Schema (draft 2020-12) of the reports' common
// fields: report.schema.json in this package.
//
//go:embed report.schema.json
var ReportSchema []byte

// schemaNode is the part of JSON Schema the reports' schema uses.
type schemaNode struct {
	Type       any                    `json:"type"` // a name or a list of names
	Required   []string               `json:"required"`
	Properties map[string]*schemaNode `json:"properties"`
	Items      *schemaNode            `json:"items"`
	Enum       []any                  `json:"enum"`
	Const      any                    `json:"const"`
}

// ValidateReport checks a JSON report against ReportSchema: required
// fields, types, enums and constants, into objects and array items. It
// returns an error naming the first field that does not conform.
func ValidateReport(data []byte) error {
	var root schemaNode
	if err := json.Unmarshal(ReportSchema, &root); err != nil {
		return fmt.Errorf("bench: report schema: %w", err)
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return fmt.Errorf("bench: report is not JSON: %w", err)
	}
	return root.check("$", v)
}

func (n *schemaNode) check(path string, v any) error {
	if n == nil {
		return nil
	}
	if n.Type != nil && !typeMatches(n.Type, v) {
		return fmt.Errorf("bench: report: %s is %s, want %v", path, jsonType(v), n.Type)
	}
	if n.Const != nil && v != n.Const {
		return fmt.Errorf("bench: report: %s is %v, want %v", path, v, n.Const)
	}
	if len(n.Enum) > 0 && !slices.Contains(n.Enum, v) {
		return fmt.Errorf("bench: report: %s is %v, want one of %v", path, v, n.Enum)
	}
	switch x := v.(type) {
	case map[string]any:
		for _, r := range n.Required {
			if _, ok := x[r]; !ok {
				return fmt.Errorf("bench: report: %s has no %q", path, r)
			}
		}
		for k, p := range n.Properties {
			if fv, ok := x[k]; ok {
				if err := p.check(path+"."+k, fv); err != nil {
					return err
				}
			}
		}
	case []any:
		for i, it := range x {
			if err := n.Items.check(fmt.Sprintf("%s[%d]", path, i), it); err != nil {
				return err
			}
		}
	}
	return nil
}

func typeMatches(t any, v any) bool {
	switch tt := t.(type) {
	case string:
		return typeIs(tt, v)
	case []any:
		for _, x := range tt {
			if s, ok := x.(string); ok && typeIs(s, v) {
				return true
			}
		}
	}
	return false
}

func typeIs(t string, v any) bool {
	switch t {
	case "integer":
		f, ok := v.(float64)
		return ok && f == math.Trunc(f)
	case "number":
		_, ok := v.(float64)
		return ok
	default:
		return jsonType(v) == t
	}
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return strings.TrimPrefix(fmt.Sprintf("%T", v), "*")
}
