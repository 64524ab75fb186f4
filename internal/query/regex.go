package query

import (
	"regexp"
	"strings"
	"unicode/utf8"

	"tierdb/internal/mongoerr"
)

// compileRegex turns a MongoDB (PCRE) pattern and options into a Go regexp.
// Go's RE2 syntax covers the common PCRE subset; patterns beyond it
// (lookaround, backreferences, possessive quantifiers, ...) are
// rejected with BadValue rather than matched differently. Two PCRE
// behaviours are emulated: the x option (Go has none), and $ and \Z also
// matching before a final newline.
func compileRegex(pattern, options string) (regexPred, error) {
	if strings.IndexByte(pattern, 0) >= 0 {
		return regexPred{}, mongoerr.New(mongoerr.BadValue, "Regular expression cannot contain an embedded null byte")
	}
	var flags []byte
	extended, multiline := false, false
	for i := 0; i < len(options); i++ {
		switch c := options[i]; c {
		case 'i', 's':
			flags = append(flags, c)
		case 'm':
			flags = append(flags, c)
			multiline = true
		case 'x':
			extended = true
		case 'u':
			// UTF-8 matching is what Go does anyway.
		default:
			return regexPred{}, mongoerr.Newf(mongoerr.BadValue, "invalid flag in regex options: %c", c)
		}
	}
	src := translatePattern(pattern, extended, multiline || inlineMultiline(pattern))
	if len(flags) > 0 {
		src = "(?" + string(flags) + ")" + src
	}
	re, err := regexp.Compile(src)
	if err != nil {
		return regexPred{}, mongoerr.Newf(mongoerr.BadValue, "Regular expression is invalid: %v", err)
	}
	return regexPred{re: re, pattern: pattern, options: options}, nil
}

// translatePattern rewrites the parts of a PCRE pattern that Go reads
// differently. It tracks escapes and character classes so that it touches
// only unescaped characters outside classes.
func translatePattern(p string, extended, multiline bool) string {
	var b strings.Builder
	inClass := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\' && i+1 < len(p):
			if p[i+1] == 'Z' && !inClass {
				// PCRE's \Z: end, or before a final newline; Go lacks it.
				b.WriteString(`(?:\n?\z)`)
				i++
				break
			}
			if n := p[i+1]; n > ' ' && n < 0x7F {
				b.WriteByte(c)
				b.WriteByte(p[i+1])
				i++
				break
			}
			// PCRE reads \ before any other character as that character;
			// Go allows it only before ASCII letters, digits and
			// punctuation. Spaces, controls and non-ASCII characters are
			// never special, so they can go in bare.
			_, size := utf8.DecodeRuneInString(p[i+1:])
			b.WriteString(p[i+1 : i+1+size])
			i += size
		case inClass:
			if c == ']' {
				inClass = false
			}
			b.WriteByte(c)
		case c == '[':
			inClass = true
			b.WriteByte(c)
			// A ']' right after '[' or '[^' is a literal, not the end.
			if i+1 < len(p) && p[i+1] == '^' {
				b.WriteByte('^')
				i++
			}
			if i+1 < len(p) && p[i+1] == ']' {
				b.WriteByte(']')
				i++
			}
		case extended && isPatternSpace(c):
			// Skipped: x ignores whitespace outside classes.
		case extended && c == '#':
			for i+1 < len(p) && p[i+1] != '\n' {
				i++
			}
		case c == '$' && !multiline:
			// PCRE's $ also matches before a final newline; matching
			// only asks whether there is a match, so consuming that
			// newline is harmless.
			b.WriteString(`(?:\n?\z)`)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// inlineMultiline reports whether the pattern turns on m itself, as in
// "(?m)^x" or "(?im:...)"; its $ must then stay Go's multi-line $.
func inlineMultiline(p string) bool {
	for i := strings.Index(p, "(?"); i >= 0; {
		for j := i + 2; j < len(p); j++ {
			c := p[j]
			if c == 'm' {
				return true
			}
			if c == '-' || !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
				break
			}
		}
		next := strings.Index(p[i+2:], "(?")
		if next < 0 {
			break
		}
		i += 2 + next
	}
	return false
}

func isPatternSpace(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '\f', '\v':
		return true
	}
	return false
}
