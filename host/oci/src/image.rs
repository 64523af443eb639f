//! Images built elsewhere, such as plait's own controller image written
//! as an OCI image layout: pushed as they are, blob for blob, so the
//! digest a registry serves is the one the layout records.

use crate::{Client, Error, Keychain, Pushed, digest};

impl Client {
    /// Pushes `blobs` (each its bytes and `sha256:` digest), then
    /// `manifest` byte for byte, to `reference` (a tag). A blob whose bytes
    /// do not match its digest is refused before anything is uploaded.
    pub async fn push_manifest(
        &self,
        reference: &str,
        blobs: &[(&[u8], &String)],
        manifest: Vec<u8>,
        keychain: &Keychain,
    ) -> Result<Pushed, Error> {
        let session = self.session(reference, keychain)?;
        if session.reference.digest().is_some() {
            return Err(Error::InvalidReference {
                reference: reference.to_string(),
                message: "push to a tag (repo:tag); the digest is the manifest's own".into(),
            });
        }
        for (bytes, expected) in blobs {
            let actual = digest(bytes);
            if actual != **expected {
                return Err(Error::UnsupportedArtifact {
                    reference: reference.to_string(),
                    message: format!("the blob {expected} holds bytes whose digest is {actual}"),
                });
            }
        }
        let manifest_digest = digest(&manifest);
        self.upload(&session, blobs, manifest).await?;
        Ok(Pushed {
            pinned: format!("{reference}@{manifest_digest}"),
            digest: manifest_digest,
            component_digest: blobs.last().map(|(_, d)| (*d).clone()).unwrap_or_default(),
        })
    }
}
