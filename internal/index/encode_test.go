package index

import "bytes"

// encode is the saved form of ix, in memory, as Save writes it; an index
// loaded damaged cannot be saved.
func (ix *Index) encode() ([]byte, error) {
	secs, err := ix.sections()
	if err != nil {
		return nil, err
	}
	return layout(secs), nil
}

// layout is the header and the sections after it, in memory.
func layout(secs [nSections][]byte) []byte {
	var b bytes.Buffer
	writeLayout(&b, secs)
	return b.Bytes()
}
