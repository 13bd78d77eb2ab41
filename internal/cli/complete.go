package cli

import (
	"fmt"
	"io"
	"sort"
	"strings"

	ucli "github.com/urfave/cli/v2"
)

// The shell completions. Each script holds the tool's command tree as data (node: the words
// each verb path offers, the flags that take a value, their fixed values, the kind of name its
// operand is) and one function that walks the words typed so far to the verb path and offers,
// at the cursor: a flag's fixed values after it (EnumFlag), files after any other flag that
// takes a value, the names that exist for a verb's first operand (asked of the binary at TAB
// time: `TOOL __complete workers`), else the verb's flags and verbs. bash, zsh and fish run the
// same walk, each in its own syntax.

// CompleteWord is the hidden first argument that prints the names of one kind that exist now,
// one a line (`swarm __complete workers`), for the completion scripts: Tool.Names says how to
// list each kind.
const CompleteWord = "__complete"

// node is what the completion offers at one verb path ("" the tool itself, "heartbeat start").
type node struct {
	path    string
	words   []string            // the flags and verbs it offers
	valued  []string            // its flags that take a value, as typed
	choices map[string][]string // a flag (as typed) with fixed values: the values
	operand string              // the kind of name its first operand is; "" none (files)
	usages  map[string]string   // a verb among words: its line of help (fish shows it)
}

func newNode(path string, flags []ucli.Flag, verbs []*verbDocs, operand string) node {
	n := node{path: path, choices: map[string][]string{}, operand: operand, usages: map[string]string{}}
	for _, v := range verbs {
		word := v.path[strings.LastIndexByte(v.path, ' ')+1:]
		n.words = append(n.words, word)
		n.usages[word] = v.usage
	}
	for _, f := range flags {
		names := typed(f)
		n.words = append(n.words, names...)
		if !takesValueFlag(f) {
			continue
		}
		n.valued = append(n.valued, names...)
		if c := flagChoices(f); len(c) > 0 {
			for _, name := range names {
				n.choices[name] = c
			}
		}
	}
	return n
}

// nodes are the tool's and each verb's, in the order of the help.
func (d docs) nodes() []node {
	out := []node{newNode("", d.flags, d.verbs, "")}
	var walk func([]*verbDocs)
	walk = func(vs []*verbDocs) {
		for _, v := range vs {
			out = append(out, newNode(v.path, v.flags, v.verbs, v.operand))
			walk(v.verbs)
		}
	}
	walk(d.verbs)
	return out
}

// keys are a map's keys, sorted: the scripts are the same bytes for the same command line.
func keys(m map[string][]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// zshFunction is the name of a tool's zsh completion function, and of the file it is
// installed as (scripts/gendocs.sh): _fleet_TOOL, with '-' as '_', a name no function of zsh's
// own completion system has.
func zshFunction(tool string) string { return fnName(tool) }

// fnName is a tool's name as a shell function's: "validate-state" → "_fleet_validate_state".
func fnName(name string) string { return "_fleet_" + strings.ReplaceAll(name, "-", "_") }

// shellWords joins words for a single-quoted shell string (a word with a quote or a backslash,
// which no flag, verb or value has, is left out rather than quoted).
func shellWords(words []string) string {
	var out []string
	for _, w := range words {
		if !strings.ContainsAny(w, "'\\") {
			out = append(out, w)
		}
	}
	return strings.Join(out, " ")
}

// writeNodeData writes the two data functions bash and zsh share (the same syntax in both):
// FN_node PATH sets fleet_words, fleet_valued and fleet_kind for a verb path and fails for
// anything else; FN_values "PATH FLAG" sets fleet_values to the flag's fixed values, or fails.
func writeNodeData(b *strings.Builder, fn string, d docs) {
	fmt.Fprintf(b, "%s_node() {\n  case $1 in\n", fn)
	for _, n := range d.nodes() {
		fmt.Fprintf(b, "    '%s') fleet_words='%s' fleet_valued='%s' fleet_kind='%s' ;;\n", n.path, shellWords(n.words), shellWords(n.valued), n.operand)
	}
	b.WriteString("    *) return 1 ;;\n  esac\n}\n")
	fmt.Fprintf(b, "%s_values() {\n  case $1 in\n", fn)
	for _, n := range d.nodes() {
		for _, flag := range keys(n.choices) {
			fmt.Fprintf(b, "    '%s %s') fleet_values='%s' ;;\n", n.path, flag, shellWords(n.choices[flag]))
		}
	}
	b.WriteString("    *) return 1 ;;\n  esac\n}\n")
}

func writeBash(w io.Writer, d docs) error {
	var b strings.Builder
	fn := fnName(d.name)
	fmt.Fprintf(&b, "# bash completion for %s, generated from its command line by '%s %s bash'.\n", d.name, d.name, CompletionWord)
	writeNodeData(&b, fn, d)
	fmt.Fprintf(&b, `%[1]s() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} verbpath= next w i operands=0
  local fleet_words fleet_valued fleet_kind fleet_values
  %[1]s_node ''
  # The verb path: each word that names a verb below the path so far; a flag's value is
  # skipped, any other word is an operand.
  for ((i = 1; i < COMP_CWORD; i++)); do
    w=${COMP_WORDS[i]}
    case " $fleet_valued " in *" $w "*) [[ ${COMP_WORDS[i+1]} == = ]] && ((i++)); ((i++)); continue ;; esac
    case $w in -*) continue ;; esac
    next=${verbpath:+$verbpath }$w
    if %[1]s_node "$next"; then verbpath=$next operands=0; else ((operands++)); fi
  done
  # "--format=" is three words to bash (COMP_WORDBREAKS holds '='): the flag, '=', the value.
  if [[ $cur == = ]]; then
    cur= prev=${COMP_WORDS[COMP_CWORD-1]}
  elif [[ $prev == = ]]; then
    prev=${COMP_WORDS[COMP_CWORD-2]}
  fi
  if [[ $cur != -* ]] && %[1]s_values "$verbpath $prev"; then
    COMPREPLY=($(compgen -W "$fleet_values" -- "$cur"))
    return
  fi
  # Any other flag's value: files (complete -o default).
  case " $fleet_valued " in *" $prev "*) COMPREPLY=(); return ;; esac
  if [[ $cur != -* && -n $fleet_kind && $operands == 0 ]]; then
    COMPREPLY=($(compgen -W "$(command %[2]s %[3]s "$fleet_kind" 2>/dev/null)" -- "$cur"))
    return
  fi
  COMPREPLY=($(compgen -W "$fleet_words" -- "$cur"))
}
complete -o default -F %[1]s %[2]s
`, fn, d.name, CompleteWord)
	_, err := io.WriteString(w, b.String())
	return err
}

func writeZsh(w io.Writer, d docs) error {
	var b strings.Builder
	// Not "_dispatch": that is compsys's own dispatcher, which a file of that name in fpath
	// replaced, and every completion of the shell with it (zshFunction).
	fn := zshFunction(d.name)
	fmt.Fprintf(&b, "#compdef %s\n# zsh completion for %s, generated from its command line by '%s %s zsh'.\n", d.name, d.name, d.name, CompletionWord)
	writeNodeData(&b, fnName(d.name), d)
	// zsh's completion variables: words (1-based, the command first) and CURRENT. The verb
	// path is not called "path": zsh ties that array to PATH.
	fmt.Fprintf(&b, `%[1]s() {
  local cur=${words[CURRENT]} prev=${words[CURRENT-1]} verbpath= next w i operands=0
  local fleet_words fleet_valued fleet_kind fleet_values
  %[2]s_node ''
  for ((i = 2; i < CURRENT; i++)); do
    w=${words[i]}
    if [[ " $fleet_valued " == *" $w "* ]]; then ((i++)); continue; fi
    [[ $w == -* ]] && continue
    next=${verbpath:+$verbpath }$w
    if %[2]s_node "$next"; then verbpath=$next operands=0; else ((operands++)); fi
  done
  if [[ $cur != -* ]] && %[2]s_values "$verbpath $prev"; then
    compadd -- ${=fleet_values}
    return
  fi
  if [[ " $fleet_valued " == *" $prev "* ]]; then _files; return; fi
  if [[ $cur != -* && -n $fleet_kind && $operands == 0 ]]; then
    compadd -- ${(f)"$(command %[3]s %[4]s $fleet_kind 2>/dev/null)"}
    return
  fi
  compadd -- ${=fleet_words}
  [[ $cur != -* && -z $fleet_kind ]] && _files
  return 0
}
if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
  %[1]s "$@"
else
  compdef %[1]s %[3]s
fi
`, fn, fnName(d.name), d.name, CompleteWord)
	_, err := io.WriteString(w, b.String())
	return err
}

func writeFish(w io.Writer, d docs) error {
	var b strings.Builder
	fn := "_" + fnName(d.name) // fish's helpers start with "__"
	fmt.Fprintf(&b, "# fish completion for %s, generated from its command line by '%s %s fish'.\n", d.name, d.name, CompletionWord)
	// fish has no dynamic scope: the data functions set globals named after the tool.
	fmt.Fprintf(&b, "function %s_node\n    switch $argv[1]\n", fn)
	for _, n := range d.nodes() {
		// fish's set leaves $status as it was: the case says its own.
		fmt.Fprintf(&b, "        case %s\n            set -g %s_words %s\n            set -g %s_valued %s\n            set -g %s_kind %s\n            return 0\n",
			fishQuote(n.path), fn, fishWords(n.described()), fn, fishWords(n.valued), fn, fishQuote(n.operand))
	}
	b.WriteString("        case '*'\n            return 1\n    end\nend\n")
	fmt.Fprintf(&b, "function %s_values\n    switch $argv[1]\n", fn)
	for _, n := range d.nodes() {
		for _, flag := range keys(n.choices) {
			fmt.Fprintf(&b, "        case %s\n            printf '%%s\\n' %s\n", fishQuote(n.path+" "+flag), fishWords(n.choices[flag]))
		}
	}
	b.WriteString("        case '*'\n            return 1\n    end\nend\n")
	fmt.Fprintf(&b, `function %[1]s
    set -l tokens (commandline -opc)
    set -l cur (commandline -ct)
    set -l prev $tokens[-1]
    set -l verbpath ''
    set -l operands 0
    set -l skip 0
    %[1]s_node ''
    for w in $tokens[2..-1]
        if test $skip = 1
            set skip 0
            continue
        end
        if contains -- $w $%[1]s_valued
            set skip 1
            continue
        end
        string match -q -- '-*' $w; and continue
        set -l next $w
        test -n "$verbpath"; and set next "$verbpath $w"
        if %[1]s_node $next
            set verbpath $next
            set operands 0
        else
            set operands (math $operands + 1)
        end
    end
    if not string match -q -- '-*' "$cur"; and %[1]s_values "$verbpath $prev"
        return
    end
    if contains -- $prev $%[1]s_valued
        __fish_complete_path "$cur"
        return
    end
    if not string match -q -- '-*' "$cur"; and test -n "$%[1]s_kind"; and test $operands = 0
        command %[2]s %[3]s $%[1]s_kind 2>/dev/null
        return
    end
    printf '%%s\n' $%[1]s_words
    if not string match -q -- '-*' "$cur"; and test -z "$%[1]s_kind"
        __fish_complete_path "$cur"
    end
end
complete -c %[2]s -f -a '(%[1]s)'
`, fn, d.name, CompleteWord)
	_, err := io.WriteString(w, b.String())
	return err
}

// described are the node's words, each verb's with its line of help after a tab: fish shows
// a candidate's description so.
func (n node) described() []string {
	out := make([]string, len(n.words))
	for i, w := range n.words {
		out[i] = w
		if u := n.usages[w]; u != "" {
			out[i] = w + "\t" + strings.Join(strings.Fields(u), " ")
		}
	}
	return out
}

// fishWords quotes each word for fish.
func fishWords(words []string) string {
	var out []string
	for _, w := range words {
		out = append(out, fishQuote(w))
	}
	return strings.Join(out, " ")
}

// fishQuote single-quotes s for fish.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// completeRequest answers CompleteWord KIND: the names of that kind that exist, one a line,
// from names (Tool.Names). Nothing is started and nothing written.
func completeRequest(names map[string]func() ([]string, error), args []string, w io.Writer) error {
	if len(args) != 2 || names[args[1]] == nil {
		var kinds []string
		for k := range names {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		return Usagef("%s needs one kind of name: %s", CompleteWord, strings.Join(kinds, ", "))
	}
	list, err := names[args[1]]()
	if err != nil {
		return err
	}
	for _, n := range list {
		fmt.Fprintln(w, n)
	}
	return nil
}
