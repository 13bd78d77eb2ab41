package schema

import "sort"

// unimplemented are keywords of drafts 2019-09 and 2020-12 that gojsonschema (draft 7) ignores.
// A schema that relies on them would let invalid documents pass, so they are reported.
var unimplemented = map[string]bool{
	"unevaluatedProperties": true,
	"unevaluatedItems":      true,
	"prefixItems":           true,
	"dependentRequired":     true,
	"dependentSchemas":      true,
	"$dynamicRef":           true,
	"$dynamicAnchor":        true,
	"$recursiveRef":         true,
	"$recursiveAnchor":      true,
	"minContains":           true,
	"maxContains":           true,
	"contentSchema":         true,
}

// Keywords whose value is a schema, an array of schemas, or a map of names to schemas. Only
// these are descended into, so a property *named* "prefixItems" is not taken for the keyword.
var (
	schemaValued = []string{"additionalProperties", "additionalItems", "items", "contains", "not",
		"if", "then", "else", "propertyNames", "unevaluatedProperties", "unevaluatedItems", "contentSchema"}
	schemaArrays = []string{"allOf", "anyOf", "oneOf", "prefixItems", "items"}
	schemaMaps   = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"}
)

// unsupportedKeywords lists, sorted and once each, the unimplemented keywords used anywhere in
// the schema tree.
func unsupportedKeywords(tree any) []string {
	found := map[string]bool{}
	var walk func(node any)
	walk = func(node any) {
		obj, ok := node.(map[string]any)
		if !ok {
			return
		}
		for k := range obj {
			if unimplemented[k] {
				found[k] = true
			}
		}
		for _, k := range schemaValued {
			walk(obj[k])
		}
		for _, k := range schemaArrays {
			if arr, ok := obj[k].([]any); ok {
				for _, s := range arr {
					walk(s)
				}
			}
		}
		for _, k := range schemaMaps {
			if m, ok := obj[k].(map[string]any); ok {
				for _, s := range m {
					walk(s)
				}
			}
		}
	}
	walk(tree)
	list := make([]string, 0, len(found))
	for k := range found {
		list = append(list, k)
	}
	sort.Strings(list)
	return list
}
