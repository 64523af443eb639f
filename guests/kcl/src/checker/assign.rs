//! Whether a value's type fits where it goes, as KCL decides it, and the
//! attributes a value of a type has.

use super::*;

impl Checker<'_> {
    pub(super) fn must_assignable_to(
        &mut self,
        ty: &Ty,
        expected: &Ty,
        span: Span,
        def_span: Option<Span>,
    ) {
        self.attr_must_assignable_to(ty, expected, span, def_span, None);
    }

    pub(super) fn attr_must_assignable_to(
        &mut self,
        ty: &Ty,
        expected: &Ty,
        span: Span,
        def_span: Option<Span>,
        attr_span: Option<Span>,
    ) {
        if self.check_type(ty, expected, span) {
            return;
        }
        let mut err = KclError::at(
            ErrorKind::TypeError,
            span,
            format!("expected {expected}, got {ty}"),
        );
        if let Some(def_span) = def_span {
            err = err.with_label(
                def_span,
                format!("variable is defined here, its type is {expected}, but got {ty}"),
            );
        }
        if let Some(attr_span) = attr_span {
            err = err.with_label(attr_span, "config attribute is defined here");
        }
        self.push_error(err);
    }

    pub(super) fn check_type(&mut self, ty: &Ty, expected: &Ty, span: Span) -> bool {
        match (ty, expected) {
            (Ty::List(item), Ty::List(expected_item)) => self.check_type(item, expected_item, span),
            (Ty::Dict(d), Ty::Dict(e)) => {
                self.check_type(&d.key, &e.key, span) && self.check_type(&d.val, &e.val, span)
            }
            (Ty::Dict(d), Ty::Schema(s)) => {
                let (d, id) = (d.clone(), s.id);
                self.dict_assignable_to_schema(&d, id, span)
            }
            (Ty::Union(types), _) => {
                let types = types.clone();
                types.iter().all(|t| self.check_type(t, expected, span))
            }
            (_, Ty::Union(types)) => {
                let types = types.clone();
                types.iter().any(|e| self.check_type(ty, e, span))
            }
            _ => assignable_to(&self.bases(), ty, expected),
        }
    }

    pub(super) fn dict_assignable_to_schema(
        &mut self,
        d: &DictTy,
        id: SchemaId,
        span: Span,
    ) -> bool {
        let Some(def) = self.def(id).cloned() else {
            return true;
        };
        if let Some(sig) = &def.index_sig {
            let val_ty = match (&d.key, &d.val) {
                (Ty::Union(keys), Ty::Union(vals)) => {
                    let mut tys = Vec::new();
                    for (i, key) in keys.iter().enumerate() {
                        if let Ty::StrLit(s) = key
                            && !def.attrs.contains_key(&**s)
                            && let Some(v) = vals.get(i)
                        {
                            tys.push(v.clone());
                        }
                    }
                    self.sup(&tys)
                }
                _ => d.val.clone(),
            };
            if d.attrs.is_empty() {
                if !self.check_type(&val_ty, &sig.val, span) {
                    self.type_error(
                        span,
                        format!(
                            "expected schema index signature value type {}, got {val_ty}",
                            sig.val
                        ),
                    );
                }
            } else {
                for (name, (attr_ty, attr_span)) in d.attrs.iter() {
                    match def.attrs.get(name) {
                        Some(a) if sig.any_other => {
                            self.must_assignable_to(attr_ty, &a.ty, span, Some(a.span))
                        }
                        _ => self.must_assignable_to(attr_ty, &sig.val, *attr_span, None),
                    }
                }
            }
            true
        } else {
            if let Ty::StrLit(key) = &d.key
                && let Some(a) = def.attrs.get(&**key)
                && let Some((attr_ty, _)) = d.attrs.get(&**key)
            {
                self.must_assignable_to(attr_ty, &a.ty, span, Some(a.span));
            }
            true
        }
    }
}
