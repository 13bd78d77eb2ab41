package schema

// A fast path for the common case: a small record that is valid.
//
// gojsonschema decodes every document into maps and slices and walks them, which costs tens of
// microseconds and hundreds of allocations per record. Most records are valid, and for the
// keywords our schemas use, "valid" can be decided in one pass over the bytes while parsing them,
// without building anything.
//
// Soundness rule: (*fastNode).valid may return true only when gojsonschema, configured as Compile
// configures it (draft 7, no auto-detection), would find the document valid AND the document is
// one well-formed JSON value (what json.Valid accepts). Whenever the fast path cannot be sure it
// returns false, and Validate runs gojsonschema, whose verdict is final. A false costs time,
// never correctness; a wrong true would let a bad record through. So:
//
//   - compileFast gives no fast path at all for a schema that uses any keyword outside a small
//     set whose gojsonschema semantics are mirrored here exactly;
//   - the parser is a strict RFC 8259 recogniser, at least as strict as json.Valid;
//   - wherever gojsonschema's decoding could make the value it checks differ from the bytes
//     (invalid UTF-8, lone surrogate escapes, duplicate keys, numbers it would round or treat as
//     integers despite a fraction), the parser gives up rather than reproduce that decoding.

import (
	"math"
	"regexp"
	"regexp/syntax"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// maxFastDepth bounds the nesting of arrays and objects the fast parser follows. Records are
// flat; anything deeper falls back, which also keeps the recursion's stack small.
const maxFastDepth = 64

// maxFastKeys bounds the property and required names of one object schema, so that the names
// seen in one object fit a fixed-size bitset on the stack.
const maxFastKeys = 256

// typeMask is a set of JSON Schema type names; the zero value places no constraint.
type typeMask uint8

const (
	tNull typeMask = 1 << iota
	tBoolean
	tObject
	tArray
	tNumber
	tInteger
	tString
)

var typeNames = map[string]typeMask{
	"null": tNull, "boolean": tBoolean, "object": tObject, "array": tArray,
	"number": tNumber, "integer": tInteger, "string": tString,
}

// literalKind says what a const or enum value is. Only scalars whose comparison can be done on
// the document's bytes are supported.
type literalKind uint8

const (
	litString literalKind = iota
	litInt
	litTrue
	litFalse
	litNull
)

// literal is one allowed value of const or enum: for litString the decoded string, for litInt
// the integer as encoding/json writes it (which is what gojsonschema compares, see literalOf).
type literal struct {
	kind literalKind
	text string
}

// fastNode is one compiled schema. Its zero value accepts everything, and so does a nil
// *fastNode below the root: fields only ever add constraints.
type fastNode struct {
	reject bool     // the schema false
	types  typeMask // allowed types; 0 when type is absent

	hasConst bool
	constVal literal
	hasEnum  bool
	enum     []literal

	// strings
	hasMinLen, hasMaxLen bool
	minLen, maxLen       int
	pattern              *regexp.Regexp
	patternDFA           *asciiDFA // the same pattern for ASCII text (nil: use pattern)

	// numbers (integer bounds only)
	hasMin, hasMax bool
	min, max       int64

	// objects: props holds each name of properties or required; byLen lists, for each name
	// length, the indexes in props of the names of that length. A record has a few dozen
	// names of varied lengths, so comparing the one or two candidates beats hashing.
	props     []fastProp
	byLen     [][]int
	required  [maxFastKeys / 64]uint64
	addlDeny  bool      // additionalProperties: false
	addlNode  *fastNode // additionalProperties as a schema (nil: anything)
	hasObject bool      // any of the object keywords is present

	// arrays
	items                    *fastNode // nil: any items
	hasMinItems, hasMaxItems bool
	minItems, maxItems       int
}

// fastProp is one name an object schema knows.
type fastProp struct {
	name    string
	inProps bool      // named in properties; otherwise only in required, so additionalProperties applies
	node    *fastNode // its schema when inProps (nil: anything)
}

// textChecks says whether a string's content matters, beyond its being a string.
func (n *fastNode) textChecks() bool {
	return n.hasMinLen || n.hasMaxLen || n.pattern != nil || n.hasConst || n.hasEnum
}

// annotations are keywords gojsonschema does not validate with; they are skipped. format is not
// among them: gojsonschema checks date-time, email and the rest.
var annotations = map[string]bool{
	"$schema": true, "$id": true, "$comment": true, "title": true, "description": true,
	"default": true, "examples": true, "nullable": true,
}

// compileFast compiles the schema tree (as encoding/json decodes it into any) for the fast
// path, or returns nil when any keyword anywhere in it is outside the supported set or has a
// value the fast path does not handle.
func compileFast(tree any) *fastNode {
	c := &fastCompiler{root: tree, refs: map[string]*fastNode{}, busy: map[string]bool{}}
	n, ok := c.node(tree)
	if !ok {
		return nil
	}
	if n == nil { // an empty schema: the root still needs a node, which accepts everything
		n = &fastNode{}
	}
	return n
}

// fastCompiler compiles one schema tree: root is the tree, for resolving $ref; refs holds the
// definitions compiled so far, busy those being compiled (a definition that refers to itself
// gets no fast path).
type fastCompiler struct {
	root any
	refs map[string]*fastNode
	busy map[string]bool
}

// holders are keywords that only hold subschemas for $ref to point at: gojsonschema validates
// nothing with them, and whatever they hold is compiled when a $ref names it.
var holders = map[string]bool{"$defs": true, "definitions": true}

// only returns the one keyword of s that is neither an annotation nor a holder, "" when there
// are none or several.
func only(s map[string]any) string {
	kw := ""
	for k := range s {
		if annotations[k] || holders[k] {
			continue
		}
		if kw != "" {
			return ""
		}
		kw = k
	}
	return kw
}

// ref compiles the schema "$ref" names. Only a definition of the same document,
// "#/$defs/NAME" or "#/definitions/NAME" with a plain NAME (no pointer escapes), is supported:
// a JSON pointer gojsonschema resolves to exactly that subtree.
func (c *fastCompiler) ref(v any) (*fastNode, bool) {
	target, ok := v.(string)
	if !ok {
		return nil, false
	}
	var holder, name string
	for h := range holders {
		if rest, found := strings.CutPrefix(target, "#/"+h+"/"); found {
			holder, name = h, rest
		}
	}
	if name == "" || strings.ContainsAny(name, "/~%") {
		return nil, false
	}
	key := holder + "/" + name
	if n, done := c.refs[key]; done {
		return n, true
	}
	if c.busy[key] {
		return nil, false
	}
	root, _ := c.root.(map[string]any)
	defs, _ := root[holder].(map[string]any)
	def, found := defs[name]
	if !found {
		return nil, false
	}
	c.busy[key] = true
	n, ok := c.node(def)
	delete(c.busy, key)
	if ok {
		c.refs[key] = n
	}
	return n, ok
}

// nullOr compiles a oneOf of two schemas, one that accepts null and nothing else ({"type":
// "null"}) and one that rejects null by its type (a nullable object, say). Exactly one branch
// holds for null (the first), and for anything else exactly when the second holds: the
// second's node, with null allowed. Any other oneOf gets no fast path.
func (c *fastCompiler) nullOr(v any) (*fastNode, bool) {
	list, ok := v.([]any)
	if !ok || len(list) != 2 {
		return nil, false
	}
	for i := range list {
		if !onlyNull(list[i]) {
			continue
		}
		other, ok := c.node(list[1-i])
		if !ok || other == nil || other.reject || other.types == 0 || other.types&tNull != 0 || other.hasConst || other.hasEnum {
			return nil, false
		}
		n := *other
		n.types |= tNull
		return &n, true
	}
	return nil, false
}

// onlyNull says whether v is the schema {"type": "null"} (annotations aside).
func onlyNull(v any) bool {
	s, ok := v.(map[string]any)
	if !ok || only(s) != "type" {
		return false
	}
	t, ok := typesOf(s["type"])
	return ok && t == tNull
}

// node compiles one schema. A nil node with ok means "no constraint at all", which the
// parser turns into a plain syntax check.
func (c *fastCompiler) node(v any) (*fastNode, bool) {
	switch s := v.(type) {
	case bool: // draft 6 and later: true is {}, false rejects everything
		if s {
			return nil, true
		}
		return &fastNode{reject: true}, true
	case map[string]any:
		return c.schemaObject(s)
	}
	return nil, false
}

// schemaObject compiles a schema written as an object (not as true or false), keyword by keyword.
func (c *fastCompiler) schemaObject(s map[string]any) (*fastNode, bool) {
	// $ref and oneOf only alone (annotations aside): draft 7 ignores the siblings of a
	// $ref, and a oneOf beside other keywords would need both checked at once.
	if _, has := s["$ref"]; has {
		if only(s) != "$ref" {
			return nil, false
		}
		return c.ref(s["$ref"])
	}
	if _, has := s["oneOf"]; has {
		if only(s) != "oneOf" {
			return nil, false
		}
		return c.nullOr(s["oneOf"])
	}
	n := &fastNode{}
	constrained := false
	// Visit keywords in a fixed order so that property indexes do not depend on map order.
	kws := make([]string, 0, len(s))
	for k := range s {
		kws = append(kws, k)
	}
	sort.Strings(kws)
	var required []string
	for _, k := range kws {
		val := s[k]
		if annotations[k] || holders[k] {
			continue
		}
		constrained = true
		ok := false
		if k == "required" {
			// Added once every property is known (addRequired).
			required, ok = stringsOf(val)
		} else {
			ok = n.keyword(c, k, val)
		}
		if !ok {
			return nil, false
		}
	}
	if required != nil && !n.addRequired(required) {
		return nil, false
	}
	if !constrained {
		return nil, true
	}
	return n, true
}

// keyword compiles the keyword k, of value val, into n. It is false for a keyword or value
// with no fast path.
func (n *fastNode) keyword(c *fastCompiler, k string, val any) bool {
	var ok bool
	switch k {
	case "type":
		n.types, ok = typesOf(val)
	case "properties":
		ok = n.compileProperties(c, val)
	case "additionalProperties":
		n.hasObject = true
		switch a := val.(type) {
		case bool:
			n.addlDeny, ok = !a, true
		case map[string]any:
			n.addlNode, ok = c.node(a)
		}
	case "const":
		n.hasConst = true
		n.constVal, ok = literalOf(val)
	case "enum":
		// gojsonschema treats an empty enum as no constraint while the drafts forbid
		// it; such a schema is odd enough to leave to gojsonschema.
		n.hasEnum = true
		n.enum, ok = literalsOf(val)
	case "minLength":
		n.hasMinLen = true
		n.minLen, ok = countOf(val)
	case "maxLength":
		n.hasMaxLen = true
		n.maxLen, ok = countOf(val)
	case "minimum":
		n.hasMin = true
		n.min, ok = boundOf(val)
	case "maximum":
		n.hasMax = true
		n.max, ok = boundOf(val)
	case "pattern":
		// gojsonschema compiles patterns with regexp.Compile, so RE2 syntax applies here
		// exactly as there.
		if p, isStr := val.(string); isStr {
			re, err := regexp.Compile(p)
			n.pattern, ok = re, err == nil
			n.patternDFA = compileASCIIDFA(p)
		}
	case "items":
		// Only the single-schema form; the tuple form brings in additionalItems.
		switch val.(type) {
		case bool, map[string]any:
			n.items, ok = c.node(val)
		}
	case "minItems":
		n.hasMinItems = true
		n.minItems, ok = countOf(val)
	case "maxItems":
		n.hasMaxItems = true
		n.maxItems, ok = countOf(val)
	}
	return ok
}

func (n *fastNode) compileProperties(c *fastCompiler, v any) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	n.hasObject = true
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		child, ok := c.node(m[name])
		if !ok {
			return false
		}
		if !n.addKey(fastProp{name: name, inProps: true, node: child}) {
			return false
		}
	}
	return true
}

// addRequired marks names as required, giving those not in properties an index of their own.
func (n *fastNode) addRequired(names []string) bool {
	n.hasObject = true
	for _, name := range names {
		i := n.lookup([]byte(name))
		if i < 0 {
			if !n.addKey(fastProp{name: name}) {
				return false
			}
			i = len(n.props) - 1
		}
		n.required[i/64] |= 1 << (i % 64)
	}
	return true
}

func (n *fastNode) addKey(p fastProp) bool {
	if len(n.props) == maxFastKeys {
		return false
	}
	for len(n.byLen) <= len(p.name) {
		n.byLen = append(n.byLen, nil)
	}
	n.byLen[len(p.name)] = append(n.byLen[len(p.name)], len(n.props))
	n.props = append(n.props, p)
	return true
}

// lookup returns the index in props of name, or -1.
func (n *fastNode) lookup(name []byte) int {
	if len(name) >= len(n.byLen) {
		return -1
	}
	for _, i := range n.byLen[len(name)] {
		if n.props[i].name == string(name) {
			return i
		}
	}
	return -1
}

func typesOf(v any) (typeMask, bool) {
	switch t := v.(type) {
	case string:
		m, ok := typeNames[t]
		return m, ok
	case []any:
		var mask typeMask
		for _, e := range t {
			s, ok := e.(string)
			if !ok {
				return 0, false
			}
			m, ok := typeNames[s]
			if !ok {
				return 0, false
			}
			mask |= m
		}
		return mask, true
	}
	return 0, false
}

func stringsOf(v any) ([]string, bool) {
	list, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(list))
	for _, e := range list {
		s, ok := e.(string)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// maxExactInt is 2^53: every integer of smaller magnitude survives the float64 that
// encoding/json decodes schema numbers into.
const maxExactInt = 1 << 53

// integralOf returns v as an int64 when it is a float64 holding an integer of magnitude below
// 2^53, so that it converts exactly.
func integralOf(v any) (int64, bool) {
	f, ok := v.(float64)
	if !ok || f != math.Trunc(f) || math.Abs(f) >= maxExactInt {
		return 0, false
	}
	return int64(f), true
}

// countOf reads a length or item count bound, which gojsonschema requires to be a non-negative
// integer.
func countOf(v any) (int, bool) {
	i, ok := integralOf(v)
	if !ok || i < 0 {
		return 0, false
	}
	return int(i), true
}

// boundOf reads minimum or maximum. Only integer bounds are supported, so that comparing an
// integer literal with the bound is exact without big.Rat.
func boundOf(v any) (int64, bool) {
	return integralOf(v)
}

// literalOf reads one const or enum value. gojsonschema compares such values by marshalling
// both sides to JSON after a round trip through float64 (marshalWithoutNumber). For an integer
// of magnitude below 2^53 that text is its plain decimal form, so a document number matches it
// exactly when its literal is that decimal form; any other spelling of the same number (1.0,
// 1e0, -0 for 0) is left to gojsonschema. Strings compare as decoded strings: marshalling is
// one-to-one on valid UTF-8, which the parser insists on.
func literalOf(v any) (literal, bool) {
	switch x := v.(type) {
	case nil:
		return literal{kind: litNull}, true
	case bool:
		if x {
			return literal{kind: litTrue}, true
		}
		return literal{kind: litFalse}, true
	case string:
		return literal{kind: litString, text: x}, true
	case float64:
		i, ok := integralOf(x)
		if !ok || (x == 0 && math.Signbit(x)) {
			return literal{}, false
		}
		return literal{kind: litInt, text: strconv.FormatInt(i, 10)}, true
	}
	return literal{}, false
}

func literalsOf(v any) ([]literal, bool) {
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return nil, false
	}
	out := make([]literal, 0, len(list))
	for _, e := range list {
		l, ok := literalOf(e)
		if !ok {
			return nil, false
		}
		out = append(out, l)
	}
	return out, true
}

// matchesLiterals applies const and enum to a scalar of kind k whose text is text (the decoded
// string, or the number's literal).
func (n *fastNode) matchesLiterals(k literalKind, text []byte) bool {
	if n.hasConst && !(n.constVal.kind == k && n.constVal.text == string(text)) {
		return false
	}
	if n.hasEnum {
		for _, l := range n.enum {
			if l.kind == k && l.text == string(text) {
				return true
			}
		}
		return false
	}
	return true
}

// allows reports whether a value of type t passes the type keyword.
func (n *fastNode) allows(t typeMask) bool {
	return n.types == 0 || n.types&t != 0
}

// fastParser is a recursive-descent JSON recogniser that checks the schema as it goes. It lives
// on the caller's stack; valid is safe for concurrent use since the nodes are read-only.
type fastParser struct {
	b     []byte
	i     int
	depth int
}

// valid reports whether doc (its BOM already stripped) is certainly one well-formed JSON value
// that gojsonschema would find valid against n. false means "not certain", not "invalid".
func (n *fastNode) valid(doc []byte) bool {
	if n == nil {
		return false
	}
	p := fastParser{b: doc}
	p.skipSpace()
	if !p.value(n) {
		return false
	}
	p.skipSpace()
	return p.i == len(p.b)
}

func (p *fastParser) skipSpace() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// value parses one value at p.i against n (nil: anything).
func (p *fastParser) value(n *fastNode) bool {
	if p.i >= len(p.b) {
		return false
	}
	if n != nil && n.reject {
		return false
	}
	switch c := p.b[p.i]; c {
	case '{':
		return p.object(n)
	case '[':
		return p.array(n)
	case '"':
		return p.stringValue(n)
	case 't':
		return p.word("true") && (n == nil || n.scalar(tBoolean, litTrue))
	case 'f':
		return p.word("false") && (n == nil || n.scalar(tBoolean, litFalse))
	case 'n':
		return p.word("null") && (n == nil || n.scalar(tNull, litNull))
	default:
		if c == '-' || (c >= '0' && c <= '9') {
			return p.number(n)
		}
	}
	return false
}

// scalar checks true, false and null: gojsonschema applies type, const and enum to them.
func (n *fastNode) scalar(t typeMask, k literalKind) bool {
	return n.allows(t) && n.matchesLiterals(k, nil)
}

func (p *fastParser) word(w string) bool {
	if len(p.b)-p.i < len(w) || string(p.b[p.i:p.i+len(w)]) != w {
		return false
	}
	p.i += len(w)
	return true
}

// number parses -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? and checks it against n.
func (p *fastParser) number(n *fastNode) bool {
	start := p.i
	b := p.b
	if b[p.i] == '-' {
		p.i++
	}
	if p.i >= len(b) {
		return false
	}
	switch {
	case b[p.i] == '0':
		p.i++
	case b[p.i] >= '1' && b[p.i] <= '9':
		for p.i < len(b) && b[p.i] >= '0' && b[p.i] <= '9' {
			p.i++
		}
	default:
		return false
	}
	integer := true
	if p.i < len(b) && b[p.i] == '.' {
		integer = false
		p.i++
		if !p.digits() {
			return false
		}
	}
	if p.i < len(b) && (b[p.i] == 'e' || b[p.i] == 'E') {
		integer = false
		p.i++
		if p.i < len(b) && (b[p.i] == '+' || b[p.i] == '-') {
			p.i++
		}
		if !p.digits() {
			return false
		}
	}
	if n == nil {
		return true
	}
	lit := b[start:p.i]
	// gojsonschema calls 1.0 and 1e2 integers (big.Rat.IsInt); rather than agree on which
	// spellings are integral, anything with a fraction or exponent falls back unless the
	// schema allows every number.
	if n.types != 0 && n.types&tNumber == 0 && (n.types&tInteger == 0 || !integer) {
		return false
	}
	if (n.hasMin || n.hasMax) && !integer {
		// A fraction against an integer bound: the literal's nearest float64 keeps its order
		// with the bound (exact in a float64), except when it rounds onto the bound, which is
		// left to big.Rat.
		f, err := strconv.ParseFloat(string(lit), 64)
		if err != nil || (n.hasMin && !(f > float64(n.min))) || (n.hasMax && !(f < float64(n.max))) {
			return false
		}
		return n.matchesLiterals(litInt, lit)
	}
	if n.hasMin || n.hasMax {
		v, ok := smallInt(lit)
		if !ok { // too long to be sure it fits: leave the comparison to big.Rat
			return false
		}
		if (n.hasMin && v < n.min) || (n.hasMax && v > n.max) {
			return false
		}
	}
	return n.matchesLiterals(litInt, lit)
}

// smallInt converts an integer literal of at most 18 digits, which always fits an int64.
// strconv.ParseInt would do, but its error keeps the text and so forces an allocation.
func smallInt(lit []byte) (int64, bool) {
	neg := lit[0] == '-'
	if neg {
		lit = lit[1:]
	}
	if len(lit) > 18 {
		return 0, false
	}
	var v int64
	for _, c := range lit {
		v = v*10 + int64(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}

func (p *fastParser) digits() bool {
	start := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	return p.i > start
}

// plain marks the bytes a string holds as they are: printable ASCII other than '"' and '\'.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// str parses a string at p.i (which holds '"') and returns its content's bounds and whether it
// holds escapes. It rejects raw control characters, malformed escapes and invalid UTF-8; the
// last is legal for json.Valid but encoding/json would replace the bytes with U+FFFD, so the
// value gojsonschema checks would not be the bytes seen here.
func (p *fastParser) str() (start, end int, escaped, ok bool) {
	b := p.b
	i := p.i + 1
	start = i
	for i < len(b) {
		c := b[i]
		if plain[c] {
			i++
			continue
		}
		switch {
		case c == '"':
			p.i = i + 1
			return start, i, escaped, true
		case c == '\\':
			escaped = true
			if i+1 >= len(b) {
				return 0, 0, false, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || hex4(b[i+2:i+6]) < 0 {
					return 0, 0, false, false
				}
				i += 6
			default:
				return 0, 0, false, false
			}
		case c < 0x20:
			return 0, 0, false, false
		default: // c >= 0x80
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				return 0, 0, false, false
			}
			i += size
		}
	}
	return 0, 0, false, false
}

// hex4 decodes four hex digits, or returns -1.
func hex4(h []byte) rune {
	var r rune
	for _, c := range h {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}

// unescapeBufs holds buffers for decoding escaped strings, which are rare; pooling keeps the
// common path free of allocations while valid stays safe for concurrent use.
var unescapeBufs = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

// unescape appends the decoded content of a string (raw, between the quotes, already checked
// by str) to dst as encoding/json decodes it. A surrogate escape that is not half of a valid
// pair is refused: encoding/json turns it into U+FFFD, and that is not worth reproducing.
func unescape(dst, raw []byte) ([]byte, bool) {
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			dst = append(dst, c)
			i++
			continue
		}
		switch raw[i+1] {
		case '"', '\\', '/':
			dst = append(dst, raw[i+1])
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r := hex4(raw[i+2 : i+6])
			i += 6
			if utf16.IsSurrogate(r) {
				if i+6 > len(raw) || raw[i] != '\\' || raw[i+1] != 'u' {
					return dst, false
				}
				r = utf16.DecodeRune(r, hex4(raw[i+2:i+6]))
				if r == utf8.RuneError {
					return dst, false
				}
				i += 6
			}
			dst = utf8.AppendRune(dst, r)
			continue
		}
		i += 2
	}
	return dst, true
}

// withText calls f with the decoded content of the string raw (escaped says whether it holds
// escapes), decoding into a pooled buffer only when it must.
func withText(raw []byte, escaped bool, f func([]byte) bool) bool {
	if !escaped {
		return f(raw)
	}
	bp := unescapeBufs.Get().(*[]byte)
	text, ok := unescape((*bp)[:0], raw)
	ok = ok && f(text)
	*bp = text[:0]
	unescapeBufs.Put(bp)
	return ok
}

func (p *fastParser) stringValue(n *fastNode) bool {
	start, end, escaped, ok := p.str()
	if !ok {
		return false
	}
	if n == nil {
		return true
	}
	if !n.allows(tString) {
		return false
	}
	if !n.textChecks() {
		return true
	}
	return withText(p.b[start:end], escaped, n.textOK)
}

// textOK applies the string keywords to a decoded string (valid UTF-8). Lengths count runes,
// as gojsonschema does.
func (n *fastNode) textOK(s []byte) bool {
	if n.hasMinLen || n.hasMaxLen {
		runes := utf8.RuneCount(s)
		if (n.hasMinLen && runes < n.minLen) || (n.hasMaxLen && runes > n.maxLen) {
			return false
		}
	}
	if n.pattern != nil {
		matched, decided := n.patternDFA.match(s)
		if !decided {
			matched = n.pattern.Match(s)
		}
		if !matched {
			return false
		}
	}
	return n.matchesLiterals(litString, s)
}

func (p *fastParser) enter() bool {
	p.depth++
	return p.depth <= maxFastDepth
}

func (p *fastParser) array(n *fastNode) bool {
	if !p.enter() {
		return false
	}
	var items *fastNode
	if n != nil {
		// A const or enum here holds scalars only, which an array never equals.
		if !n.allows(tArray) || n.hasConst || n.hasEnum {
			return false
		}
		items = n.items
	}
	p.i++ // '['
	p.skipSpace()
	count := 0
	if p.i < len(p.b) && p.b[p.i] == ']' {
		p.i++
	} else {
		for {
			if !p.value(items) {
				return false
			}
			count++
			p.skipSpace()
			if p.i >= len(p.b) {
				return false
			}
			if p.b[p.i] == ']' {
				p.i++
				break
			}
			if p.b[p.i] != ',' {
				return false
			}
			p.i++
			p.skipSpace()
		}
	}
	p.depth--
	if n != nil && ((n.hasMinItems && count < n.minItems) || (n.hasMaxItems && count > n.maxItems)) {
		return false
	}
	return true
}

func (p *fastParser) object(n *fastNode) bool {
	if !p.enter() {
		return false
	}
	if n != nil && (!n.allows(tObject) || n.hasConst || n.hasEnum) {
		return false
	}
	// seen has a bit for each name of n.keys met in this object. A second occurrence falls
	// back: gojsonschema keeps only the last value. Repeated names that the schema does not
	// know need no check: their values all pass the same additionalProperties here, a superset
	// of gojsonschema's check of the last one, and the set of names is the same either way.
	var seen [maxFastKeys / 64]uint64
	p.i++ // '{'
	p.skipSpace()
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
	} else {
		for {
			if p.i >= len(p.b) || p.b[p.i] != '"' {
				return false
			}
			start, end, escaped, ok := p.str()
			if !ok {
				return false
			}
			var child *fastNode
			if n != nil && n.hasObject {
				if !withText(p.b[start:end], escaped, func(name []byte) bool {
					var ok bool
					child, ok = n.member(name, &seen)
					return ok
				}) {
					return false
				}
			}
			p.skipSpace()
			if p.i >= len(p.b) || p.b[p.i] != ':' {
				return false
			}
			p.i++
			p.skipSpace()
			if !p.value(child) {
				return false
			}
			p.skipSpace()
			if p.i >= len(p.b) {
				return false
			}
			if p.b[p.i] == '}' {
				p.i++
				break
			}
			if p.b[p.i] != ',' {
				return false
			}
			p.i++
			p.skipSpace()
		}
	}
	p.depth--
	if n != nil {
		for w := range seen {
			if n.required[w]&^seen[w] != 0 {
				return false
			}
		}
	}
	return true
}

// member looks up the name of an object member and returns the schema its value must pass,
// or false when the name is a repeat of a known one or not allowed.
func (n *fastNode) member(name []byte, seen *[maxFastKeys / 64]uint64) (*fastNode, bool) {
	if i := n.lookup(name); i >= 0 {
		bit := uint64(1) << (i % 64)
		if seen[i/64]&bit != 0 {
			return nil, false
		}
		seen[i/64] |= bit
		if n.props[i].inProps {
			return n.props[i].node, true
		}
	}
	if n.addlDeny {
		return nil, false
	}
	return n.addlNode, true
}

// asciiDFA is a deterministic automaton deciding whether a pattern matches somewhere in an ASCII
// text, built from the program regexp.Compile itself would run. regexp's own matchers cost a
// third of a record's check (the prompt hash's ^[a-f0-9]{64}$ alone is a few hundred ns); a
// table lookup per byte is a few ns. Text holding other bytes goes to regexp.
//
// A state is the set of program instructions alive after the text read so far, for matches
// starting at any position (the search is unanchored, as MatchString's). Only the empty-width
// assertions \A (^) and \z ($) are supported, which depend on the position alone; a pattern
// with line or word assertions gets no automaton.
type asciiDFA struct {
	next       [][128]uint16 // next[state][byte]
	matched    []bool        // a match has been found: the text matches, whatever follows
	matchAtEnd []bool        // a match completes if the text ends here
	start      uint16
}

// maxDFAStates and maxDFAInsts bound the automaton and the work of building it (states × 128
// bytes × instructions); patterns beyond them are left to regexp.
const (
	maxDFAStates = 300
	maxDFAInsts  = 300
)

// match reports whether the pattern matches s, and false for decided when s is not all ASCII
// (or there is no automaton), in which case regexp must be asked.
func (d *asciiDFA) match(s []byte) (matched, decided bool) {
	if d == nil {
		return false, false
	}
	st := d.start
	for _, c := range s {
		if c >= utf8.RuneSelf {
			return false, false
		}
		st = d.next[st][c]
		if d.matched[st] {
			return true, true
		}
	}
	return d.matchAtEnd[st], true
}

// dfaBuilder performs the subset construction over a syntax.Prog.
type dfaBuilder struct {
	prog *syntax.Prog
	d    *asciiDFA
	ids  map[string]uint16
	sets [][]uint32 // the instructions of each state: rune instructions and pending \z
	mark []uint32   // mark[pc] == gen: pc visited in the current closure
	gen  uint32
}

// visit reports whether pc is new to the current walk, marking it.
func (b *dfaBuilder) visit(pc uint32) bool {
	if b.mark[pc] == b.gen {
		return false
	}
	b.mark[pc] = b.gen
	return true
}

// compileASCIIDFA builds the automaton for pattern, or returns nil when it uses an assertion
// other than \A and \z or needs too many states.
func compileASCIIDFA(pattern string) *asciiDFA {
	re, err := syntax.Parse(pattern, syntax.Perl) // as regexp.Compile does
	if err != nil {
		return nil
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return nil
	}
	if len(prog.Inst) > maxDFAInsts {
		return nil
	}
	for _, inst := range prog.Inst {
		if inst.Op == syntax.InstEmptyWidth &&
			syntax.EmptyOp(inst.Arg)&^(syntax.EmptyBeginText|syntax.EmptyEndText) != 0 {
			return nil
		}
	}
	b := &dfaBuilder{prog: prog, d: &asciiDFA{}, ids: map[string]uint16{}, mark: make([]uint32, len(prog.Inst))}
	// The start state is kept apart from the others (its key is marked), since only there is
	// \A true; at the end of an empty text both \A and \z hold.
	set, matched := b.closure([]uint32{uint32(prog.Start)}, true)
	start, ok := b.state(set, matched, true)
	if !ok {
		return nil
	}
	b.d.start = start
	for st := 0; st < len(b.sets); st++ { // b.sets grows as new states are found
		for c := 0; c < utf8.RuneSelf; c++ {
			var seeds []uint32
			if !b.d.matched[st] {
				for _, pc := range b.sets[st] {
					inst := &prog.Inst[pc]
					if inst.Op != syntax.InstEmptyWidth && inst.MatchRune(rune(c)) {
						seeds = append(seeds, inst.Out)
					}
				}
			}
			// A match may also begin right after this byte.
			seeds = append(seeds, uint32(prog.Start))
			set, matched := b.closure(seeds, false)
			next, ok := b.state(set, matched || b.d.matched[st], false)
			if !ok {
				return nil
			}
			b.d.next[st][c] = next
		}
	}
	return b.d
}

// closure follows the instructions that consume nothing from seeds, at a position that is the
// start of the text or not (never its end: \z instructions are kept, pending, in the set). It
// returns the rune instructions and pending \z reached, sorted, and whether Match was reached.
func (b *dfaBuilder) closure(seeds []uint32, atStart bool) ([]uint32, bool) {
	b.gen++
	var set []uint32
	matched := false
	stack := append([]uint32(nil), seeds...)
	for len(stack) > 0 {
		pc := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if !b.visit(pc) {
			continue
		}
		inst := &b.prog.Inst[pc]
		switch inst.Op {
		case syntax.InstMatch:
			matched = true
		case syntax.InstFail:
		case syntax.InstAlt, syntax.InstAltMatch:
			stack = append(stack, inst.Out, inst.Arg)
		case syntax.InstCapture, syntax.InstNop:
			stack = append(stack, inst.Out)
		case syntax.InstEmptyWidth:
			op := syntax.EmptyOp(inst.Arg)
			switch {
			case op&syntax.EmptyBeginText != 0 && !atStart:
				// \A cannot hold here, nor later.
			case op&syntax.EmptyEndText != 0:
				set = append(set, pc)
			default:
				stack = append(stack, inst.Out)
			}
		default: // the rune instructions
			set = append(set, pc)
		}
	}
	sort.Slice(set, func(i, j int) bool { return set[i] < set[j] })
	return set, matched
}

// matchesAtEnd reports whether, with the text ending at a state of set, a pending \z leads to
// Match. atStart says whether the end is also the start (an empty text).
func (b *dfaBuilder) matchesAtEnd(set []uint32, atStart bool) bool {
	var pending []uint32
	for _, pc := range set {
		inst := &b.prog.Inst[pc]
		if inst.Op == syntax.InstEmptyWidth {
			pending = append(pending, pc)
		}
	}
	// At the end every \z holds, so follow the pending ones and any reached after them; \A
	// holds only if atStart.
	b.gen++
	for len(pending) > 0 {
		pc := pending[len(pending)-1]
		pending = pending[:len(pending)-1]
		if !b.visit(pc) {
			continue
		}
		inst := &b.prog.Inst[pc]
		switch inst.Op {
		case syntax.InstMatch:
			return true
		case syntax.InstAlt, syntax.InstAltMatch:
			pending = append(pending, inst.Out, inst.Arg)
		case syntax.InstCapture, syntax.InstNop:
			pending = append(pending, inst.Out)
		case syntax.InstEmptyWidth:
			if syntax.EmptyOp(inst.Arg)&syntax.EmptyBeginText == 0 || atStart {
				pending = append(pending, inst.Out)
			}
		}
	}
	return false
}

// state returns the id of the state for set, adding it if new.
func (b *dfaBuilder) state(set []uint32, matched, atStart bool) (uint16, bool) {
	key := make([]byte, 0, 4*len(set)+2)
	if matched { // once matched, what else is alive no longer matters
		set = nil
		key = append(key, 'M')
	}
	if atStart {
		key = append(key, 'S')
	}
	for _, pc := range set {
		key = append(key, byte(pc>>24), byte(pc>>16), byte(pc>>8), byte(pc))
	}
	if id, ok := b.ids[string(key)]; ok {
		return id, true
	}
	if len(b.sets) == maxDFAStates {
		return 0, false
	}
	id := uint16(len(b.sets))
	b.ids[string(key)] = id
	b.sets = append(b.sets, set)
	b.d.next = append(b.d.next, [128]uint16{})
	b.d.matched = append(b.d.matched, matched)
	b.d.matchAtEnd = append(b.d.matchAtEnd, matched || b.matchesAtEnd(set, atStart))
	return id, true
}
