package schema

// References ($ref) are resolved here, never by gojsonschema.
//
// Left to itself, gojsonschema fetches a $ref to http://… with no time limit, reads file:///…
// wherever it points, resolves a relative $ref against the schema's $id (a URL: another fetch),
// and recurses for ever on a reference cycle such as {"$ref":"#"} until the Go stack overflows
// (1 GB, then a crash no recover catches). The users' schemas sit in state/schemas/, where
// validate-state picks them up unasked, so none of that may depend on what a schema says.
//
// So a schema is bundled before gojsonschema sees it: every $ref is resolved to a local file of
// the schema directory (a path relative to the referring file, or an absolute URI under the root
// schema's $id, which names the same file) or to a fragment, each file referred to is read
// (bounded, regular files only, never through a link) and placed under the root's definitions,
// every $ref becomes a fragment of the one bundled document, and every $id is removed, so
// gojsonschema has nothing to fetch. A chain of references and in-place applicators (allOf,
// anyOf, oneOf, not, if, then, else) that comes back to where it started without descending into
// the document would never end: it is an error that names the schema and the cycle.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/agentfleet/fleet/internal/fsx"
)

// MaxSchemaSize is the largest schema file read; the users' are a few kilobytes.
const MaxSchemaSize = 1 << 20

// maxSchemaFiles bounds the files one schema may pull in through its references.
const maxSchemaFiles = 64

// bundleKey is the name under the root's definitions of a file a reference pulled in.
const bundleKey = "fleet-bundled:"

// inPlace are the keywords whose subschemas apply to the same value as their parent: a cycle
// through them (and $ref) never reaches into the document. inPlaceMaps hold such subschemas by
// property name (applied to the object itself when it has the property).
var (
	inPlace     = []string{"allOf", "anyOf", "oneOf", "not", "if", "then", "else"}
	inPlaceMaps = []string{"dependencies", "dependentSchemas"}
)

// bundler resolves the references of one schema.
type bundler struct {
	source string // the root schema's name, for messages
	dir    string // the schema directory; "" allows no file references
	base   *url.URL
	root   map[string]any
	files  map[string]string // a file's path relative to dir → its key under definitions
	pulled map[string]any    // the files pulled in, by key, added to definitions at the end
	queue  []pending
}

// pending is a document whose references are still to be resolved: the root ("" file) or a
// file pulled in, placed at pointer.
type pending struct {
	file    string
	pointer string
	tree    any
}

// bundle resolves the references in tree, the schema read from source in the schema directory
// dir (dir "" for a schema with no directory, whose references can only be fragments), and
// returns the tree to compile: one document, no $id, every $ref a fragment of it.
func bundle(tree any, source, dir string) (any, error) {
	root, ok := tree.(map[string]any)
	if !ok {
		return tree, nil // true or false: no references
	}
	b := &bundler{source: source, dir: dir, root: root, files: map[string]string{}, pulled: map[string]any{}}
	if id, ok := root["$id"].(string); ok {
		if u, err := url.Parse(id); err == nil && u.IsAbs() {
			b.base = u
		}
	}
	if !hasRef(tree) {
		stripIDs(tree)
		return tree, b.checkCycles()
	}
	defs, isMap := root["definitions"].(map[string]any)
	if root["definitions"] != nil && !isMap {
		return nil, fmt.Errorf("schema %s: definitions is not an object", source)
	}
	rootFile := ""
	if source != "" && dir != "" {
		if rel, err := filepath.Rel(dir, source); err == nil && filepath.IsLocal(rel) {
			rootFile = filepath.ToSlash(rel)
			b.files[rootFile] = ""
		}
	}
	b.queue = append(b.queue, pending{file: rootFile, pointer: "", tree: tree})
	for len(b.queue) > 0 {
		p := b.queue[0]
		b.queue = b.queue[1:]
		if err := b.rewrite(p.tree, p); err != nil {
			return nil, err
		}
	}
	// Added only now: walking the root above must not meet them (their references are
	// relative to their own file).
	if len(b.pulled) > 0 {
		if defs == nil {
			defs = map[string]any{}
			root["definitions"] = defs
		}
		for key, t := range b.pulled {
			if _, taken := defs[key]; taken {
				return nil, fmt.Errorf("schema %s: definitions already holds %q", source, key)
			}
			defs[key] = t
		}
	}
	stripIDs(tree)
	return tree, b.checkCycles()
}

// rewrite turns every $ref in the schema node v of document p into a fragment of the bundle.
func (b *bundler) rewrite(v any, p pending) error {
	var err error
	walkSchemas(v, func(node map[string]any) bool {
		ref, ok := node["$ref"].(string)
		if !ok || err != nil {
			return err == nil
		}
		var frag string
		frag, err = b.resolve(ref, p)
		if err == nil {
			node["$ref"] = frag
		}
		return err == nil
	})
	return err
}

// resolve returns the fragment of the bundle that ref, in document p, names, pulling in the
// file it names if needed.
func (b *bundler) resolve(ref string, p pending) (string, error) {
	u, err := url.Parse(ref)
	if err != nil {
		return "", fmt.Errorf("schema %s: $ref %q is not a URI reference: %v", b.source, ref, err)
	}
	fragment := u.Fragment
	if fragment != "" && !strings.HasPrefix(fragment, "/") {
		return "", fmt.Errorf("schema %s: $ref %q: only JSON pointer fragments (#/…) are supported, not anchors", b.source, ref)
	}
	u.Fragment, u.RawFragment = "", ""
	file := p.file
	switch {
	case u.String() == "":
		// A fragment of the document the reference is in.
	case u.Scheme == "" && u.Host == "" && u.Opaque == "" && !strings.HasPrefix(u.Path, "/") && u.RawQuery == "":
		file = path.Join(path.Dir(p.file), u.Path)
	case b.base != nil && sameDir(b.base, u):
		// The root's $id names the file it is in: a URI under it names a file beside it.
		rel := strings.TrimPrefix(u.Path, path.Dir(b.base.Path)+"/")
		file = path.Clean(rel)
	default:
		return "", fmt.Errorf("schema %s: $ref %q: schemas are loaded from local files only (a path relative to the schema directory, or #/… within the schema); nothing is fetched", b.source, ref)
	}
	pointer := p.pointer
	if file != p.file {
		if pointer, err = b.load(file, ref); err != nil {
			return "", err
		}
	}
	return "#" + (&url.URL{Fragment: pointer + fragment}).EscapedFragment(), nil
}

// sameDir reports whether u is a URI in the directory of base (same scheme, host and path
// directory), so a file beside the root schema.
func sameDir(base, u *url.URL) bool {
	return u.Scheme == base.Scheme && u.Host == base.Host && u.RawQuery == "" &&
		strings.HasPrefix(u.Path, path.Dir(base.Path)+"/")
}

// load pulls in the schema file at file (relative to the schema directory) and returns the
// pointer it is placed at.
func (b *bundler) load(file, ref string) (string, error) {
	if key, ok := b.files[file]; ok {
		if key == "" {
			return "", nil // the root schema itself
		}
		return "/definitions/" + escapeToken(key), nil
	}
	if b.dir == "" {
		return "", fmt.Errorf("schema %s: $ref %q: a built-in schema refers to no file", b.source, ref)
	}
	if !filepath.IsLocal(filepath.FromSlash(file)) {
		return "", fmt.Errorf("schema %s: $ref %q: %s is outside the schema directory %s", b.source, ref, file, b.dir)
	}
	if len(b.files) >= maxSchemaFiles {
		return "", fmt.Errorf("schema %s: its references pull in more than %d files", b.source, maxSchemaFiles)
	}
	full := filepath.Join(b.dir, filepath.FromSlash(file))
	doc, err := readSchemaFile(full)
	if err != nil {
		return "", fmt.Errorf("schema %s: $ref %q: %w", b.source, ref, err)
	}
	var tree any
	if err := json.Unmarshal(fsx.StripBOM(doc), &tree); err != nil {
		return "", fmt.Errorf("schema %s: $ref %q: %s is not valid JSON: %v", b.source, ref, full, err)
	}
	key := bundleKey + file
	b.files[file] = key
	b.pulled[key] = tree
	pointer := "/definitions/" + escapeToken(key)
	b.queue = append(b.queue, pending{file: file, pointer: pointer, tree: tree})
	return pointer, nil
}

// readSchemaFile reads a schema file: a regular file of at most MaxSchemaSize bytes, never
// through a symbolic link (the schema directory is in the state directory, where another
// user's link must not make us read what they choose), never waiting on a named pipe.
func readSchemaFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("%s is a symbolic link, which is not followed", path)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if fi.Size() > MaxSchemaSize {
		return nil, fmt.Errorf("%s is %s, over the %s a schema may be", path, fsx.HumanBytes(fi.Size()), fsx.HumanBytes(MaxSchemaSize))
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxSchemaSize+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if len(b) > MaxSchemaSize {
		return nil, fmt.Errorf("%s grew over the %s a schema may be", path, fsx.HumanBytes(MaxSchemaSize))
	}
	return b, nil
}

// walkSchemas calls fn with every schema object in v (v itself, then its subschemas wherever a
// keyword holds one, definitions and $defs included) until fn returns false.
func walkSchemas(v any, fn func(map[string]any) bool) bool {
	node, ok := v.(map[string]any)
	if !ok {
		return true
	}
	if !fn(node) {
		return false
	}
	for _, k := range schemaValued {
		if !walkSchemas(node[k], fn) {
			return false
		}
	}
	for _, k := range schemaArrays {
		if arr, ok := node[k].([]any); ok {
			for _, s := range arr {
				if !walkSchemas(s, fn) {
					return false
				}
			}
		}
	}
	for _, k := range schemaMaps {
		if m, ok := node[k].(map[string]any); ok {
			for _, name := range sortedNames(m) {
				if !walkSchemas(m[name], fn) {
					return false
				}
			}
		}
	}
	return true
}

func sortedNames(m map[string]any) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

func hasRef(tree any) bool {
	found := false
	walkSchemas(tree, func(n map[string]any) bool {
		_, found = n["$ref"]
		return !found
	})
	return found
}

// stripIDs removes every $id: the bundle is one document, and gojsonschema would resolve
// fragments against an $id's URL (and fetch it).
func stripIDs(tree any) {
	walkSchemas(tree, func(n map[string]any) bool {
		delete(n, "$id")
		return true
	})
}

// checkCycles returns an error when a $ref leads back to itself through references and in-place
// applicators only: checking a value against it would never end.
func (b *bundler) checkCycles() error {
	cc := &cycleCheck{b: b, state: map[string]int{}}
	// Every schema of the document is a possible start: a cycle anywhere is an error, even one
	// no value reaches today.
	var err error
	walkPointers(b.root, "", func(ptr string, node map[string]any) bool {
		if cc.state[ptr] == cycleUnseen {
			err = cc.visit(ptr, node)
		}
		return err == nil
	})
	return err
}

// The states of a schema in checkCycles' depth-first walk.
const (
	cycleUnseen = iota
	cycleOnPath // being visited: met again, it closes a cycle
	cycleDone
)

// cycleCheck is one checkCycles: the state of every schema met, by pointer, and the path of
// pointers from the start to the schema being visited.
type cycleCheck struct {
	b     *bundler
	state map[string]int
	path  []string
}

// visit walks the schema node at ptr, then what it refers to and its in-place applicators.
func (cc *cycleCheck) visit(ptr string, node any) error {
	switch cc.state[ptr] {
	case cycleOnPath:
		return cc.cycleError(ptr)
	case cycleDone:
		return nil
	}
	obj, ok := node.(map[string]any)
	if !ok {
		cc.state[ptr] = cycleDone
		return nil
	}
	cc.state[ptr] = cycleOnPath
	cc.path = append(cc.path, ptr)
	defer func() { cc.path = cc.path[:len(cc.path)-1] }()
	if ref, ok := obj["$ref"].(string); ok && strings.HasPrefix(ref, "#") {
		target, tptr, err := cc.b.lookup(ref)
		if err != nil {
			return err
		}
		if err := cc.visit(tptr, target); err != nil {
			return err
		}
	}
	if err := cc.visitInPlace(ptr, obj); err != nil {
		return err
	}
	cc.state[ptr] = cycleDone
	return nil
}

// visitInPlace visits the schemas obj, at ptr, applies to the value itself (allOf, not,
// dependencies…), in a fixed order.
func (cc *cycleCheck) visitInPlace(ptr string, obj map[string]any) error {
	for _, k := range inPlace {
		switch sub := obj[k].(type) {
		case map[string]any:
			if err := cc.visit(ptr+"/"+k, sub); err != nil {
				return err
			}
		case []any:
			for i, s := range sub {
				if err := cc.visit(ptr+"/"+k+"/"+strconv.Itoa(i), s); err != nil {
					return err
				}
			}
		}
	}
	for _, k := range inPlaceMaps {
		if m, ok := obj[k].(map[string]any); ok {
			for _, name := range sortedNames(m) {
				if err := cc.visit(ptr+"/"+k+"/"+escapeToken(name), m[name]); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// cycleError is the error for the cycle that ptr, met again, closes on the path.
func (cc *cycleCheck) cycleError(ptr string) error {
	start := 0
	for i, p := range cc.path {
		if p == ptr {
			start = i
		}
	}
	cycle := append(append([]string{}, cc.path[start:]...), ptr)
	for i, p := range cycle {
		if p == "" {
			cycle[i] = "#"
		} else {
			cycle[i] = "#" + p
		}
	}
	return fmt.Errorf("schema %s: $ref cycle %s never reaches into the document: checking a value against it would never end", cc.b.source, strings.Join(cycle, " → "))
}

// lookup resolves a fragment reference ("#/definitions/a%20b") in the bundle, returning the
// node and its canonical pointer.
func (b *bundler) lookup(ref string) (any, string, error) {
	frag, err := url.PathUnescape(strings.TrimPrefix(ref, "#"))
	if err != nil {
		return nil, "", fmt.Errorf("schema %s: $ref %q: %v", b.source, ref, err)
	}
	var node any = b.root
	canonical := ""
	if frag == "" {
		return node, "", nil
	}
	for _, tok := range strings.Split(frag[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch n := node.(type) {
		case map[string]any:
			node = n[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(n) {
				node = nil
			} else {
				node = n[i]
			}
		default:
			node = nil
		}
		if node == nil {
			return nil, "", fmt.Errorf("schema %s: $ref %q points at nothing", b.source, ref)
		}
		canonical += "/" + escapeToken(tok)
	}
	return node, canonical, nil
}

// walkPointers is walkSchemas with each schema's canonical JSON pointer.
func walkPointers(v any, ptr string, fn func(string, map[string]any) bool) bool {
	node, ok := v.(map[string]any)
	if !ok {
		return true
	}
	if !fn(ptr, node) {
		return false
	}
	for _, k := range schemaValued {
		if !walkPointers(node[k], ptr+"/"+k, fn) {
			return false
		}
	}
	for _, k := range schemaArrays {
		if arr, ok := node[k].([]any); ok {
			for i, s := range arr {
				if !walkPointers(s, ptr+"/"+k+"/"+strconv.Itoa(i), fn) {
					return false
				}
			}
		}
	}
	for _, k := range schemaMaps {
		if m, ok := node[k].(map[string]any); ok {
			for _, name := range sortedNames(m) {
				if !walkPointers(m[name], ptr+"/"+k+"/"+escapeToken(name), fn) {
					return false
				}
			}
		}
	}
	return true
}

// escapeToken encodes a JSON pointer reference token, whole (escape clips long ones, for
// messages).
func escapeToken(token string) string {
	return strings.ReplaceAll(strings.ReplaceAll(token, "~", "~0"), "/", "~1")
}
