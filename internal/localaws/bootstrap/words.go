package bootstrap

import (
	"errors"
	"strings"
)

// shellCommands splits a shell script into simple commands and their words,
// with bash's quote removal: '...' is literal, "..." honours \" \\ \$ \`
// and backslash-newline, an unquoted backslash escapes the next character
// and backslash-newline joins lines. Unquoted newlines, ';', '|' and '&'
// end a command; '#' at the start of a word starts a comment. Variables
// are not expanded.
func shellCommands(s string) ([][]string, error) {
	var (
		cmds [][]string
		cmd  []string
		word strings.Builder
		in   bool // a word is being built (it may be empty: '')
	)
	endWord := func() {
		if in {
			cmd = append(cmd, word.String())
			word.Reset()
			in = false
		}
	}
	endCmd := func() {
		endWord()
		if len(cmd) > 0 {
			cmds = append(cmds, cmd)
			cmd = nil
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("unterminated single quote")
			}
			word.WriteString(s[i+1 : i+1+j])
			in = true
			i += j + 1
		case c == '"':
			in = true
			closed := false
			for i++; i < len(s); i++ {
				if s[i] == '"' {
					closed = true
					break
				}
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`\n", s[i+1]) >= 0 {
					i++
					if s[i] == '\n' {
						continue
					}
				}
				word.WriteByte(s[i])
			}
			if !closed {
				return nil, errors.New("unterminated double quote")
			}
		case c == '\\':
			if i+1 < len(s) {
				i++
				if s[i] != '\n' {
					word.WriteByte(s[i])
					in = true
				}
			}
		case c == '#' && !in:
			j := strings.IndexByte(s[i:], '\n')
			if j < 0 {
				i = len(s)
			} else {
				i += j - 1
			}
		case c == ' ' || c == '\t' || c == '\r':
			endWord()
		case c == '\n' || c == ';' || c == '|' || c == '&':
			endCmd()
		default:
			word.WriteByte(c)
			in = true
		}
	}
	endCmd()
	return cmds, nil
}

// shellWords splits one command line into words (see shellCommands); all
// separators are treated as word breaks.
func shellWords(s string) ([]string, error) {
	cmds, err := shellCommands(s)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, c := range cmds {
		out = append(out, c...)
	}
	return out, nil
}

// powershellWords splits a PowerShell command line into words: '...' is
// literal with ” for a quote, "..." honours `" and "" (variables are not
// expanded), and whitespace separates words.
func powershellWords(s string) ([]string, error) {
	var (
		out  []string
		word strings.Builder
		in   bool
	)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\'', '"':
			in = true
			closed := false
			for i++; i < len(s); i++ {
				if s[i] == c {
					if i+1 < len(s) && s[i+1] == c {
						word.WriteByte(c)
						i++
						continue
					}
					closed = true
					break
				}
				if c == '"' && s[i] == '`' && i+1 < len(s) {
					i++
				}
				word.WriteByte(s[i])
			}
			if !closed {
				return nil, errors.New("unterminated quoted string")
			}
		case ' ', '\t', '\r', '\n':
			if in {
				out = append(out, word.String())
				word.Reset()
				in = false
			}
		default:
			word.WriteByte(c)
			in = true
		}
	}
	if in {
		out = append(out, word.String())
	}
	return out, nil
}
