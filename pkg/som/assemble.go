package som

// snapshot builds the Snapshot from the compiled regions and elements.
func (c *compiler) snapshot() *Snapshot {
	s := &Snapshot{Meta: c.meta, Regions: make([]Region, 0, len(c.regions)), Elements: make([]Element, 0, len(c.elems))}
	for _, r := range c.regions {
		if r.Form != nil {
			r.Form.Fields = r.Form.Fields[:0]
		}
	}
	for _, e := range c.elems {
		if e.form >= 0 && (e.Kind.Control() || e.Kind == KindButton) {
			f := c.regions[e.form]
			e.Form = f.ID
			f.Form.Fields = append(f.Form.Fields, e.ID)
		}
		e.Region = c.regions[e.region].ID
		s.Elements = append(s.Elements, e.Element)
		cn := &s.Meta.Counts
		cn.Elements++
		if e.Kind.Interactive() {
			cn.Interactive++
		}
		switch e.Kind {
		case KindLink:
			cn.Links++
		case KindPrice:
			cn.Prices++
		}
	}
	for _, r := range c.regions {
		reg := r.Region
		if r.Form != nil {
			f := *r.Form
			f.Fields = append([]string{}, f.Fields...)
			reg.Form = &f
			s.Meta.Counts.Forms++
		}
		s.Regions = append(s.Regions, reg)
	}
	s.Meta.Counts.Regions = len(s.Regions)
	if len(c.trunc.Reasons) > 0 {
		t := c.trunc
		s.Meta.Truncated = &t
	}
	return s
}
