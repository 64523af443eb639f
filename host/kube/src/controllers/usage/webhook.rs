//! Whether the API server asks the `nousages` webhook before it deletes a
//! resource in use. Without it a Usage labels what it protects, but the
//! deletion goes through: the Usage says so instead of `Ready=True`.

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use kube::api::{Api, DynamicObject, ListParams};
use serde_json::Value;

use crate::vocabulary::api::{NO_USAGES_WEBHOOK, webhook_configuration_resource};

/// How long an answer is taken as read: every Usage's reconcile asks.
const ANSWER_TTL: Duration = Duration::from_secs(10);

/// Why a Usage is not `Ready` while nothing refuses deletions.
pub const NOT_CONFIGURED_REASON: &str = "WebhookNotConfigured";

/// Whether deletions of resources in use are refused, read at most every
/// [`ANSWER_TTL`].
pub struct Protection {
    client: kube::Client,
    answer: Mutex<Option<(Instant, Option<String>)>>,
}

impl Protection {
    pub fn new(client: kube::Client) -> Protection {
        Protection {
            client,
            answer: Mutex::new(None),
        }
    }

    /// Why deletions are not refused, if they are not: no
    /// ValidatingWebhookConfiguration holds the `nousages` webhook, or the
    /// API server cannot trust the service it names. A list that fails
    /// (the controller may not read webhook configurations) is no answer,
    /// and the Usage is not downgraded for it.
    pub async fn unprotected(&self) -> Option<String> {
        if let Some((read, answer)) = &*self.answer.lock().unwrap_or_else(PoisonError::into_inner)
            && read.elapsed() < ANSWER_TTL
        {
            return answer.clone();
        }
        let api: Api<DynamicObject> =
            Api::all_with(self.client.clone(), &webhook_configuration_resource());
        let answer = match api.list(&ListParams::default()).await {
            Ok(list) => {
                let configurations: Vec<Value> = list
                    .items
                    .iter()
                    .filter_map(|c| serde_json::to_value(c).ok())
                    .collect();
                unprotected_by(&configurations)
            }
            Err(error) => {
                tracing::debug!(%error, "cannot tell whether the nousages webhook is configured");
                None
            }
        };
        *self.answer.lock().unwrap_or_else(PoisonError::into_inner) =
            Some((Instant::now(), answer.clone()));
        answer
    }
}

/// Why `configurations` (ValidatingWebhookConfigurations) refuse no
/// deletion of a resource in use, if they do not.
pub fn unprotected_by(configurations: &[Value]) -> Option<String> {
    let hooks: Vec<&Value> = configurations
        .iter()
        .filter_map(|c| c["webhooks"].as_array())
        .flatten()
        .filter(|hook| hook["name"] == NO_USAGES_WEBHOOK)
        .collect();
    if hooks.is_empty() {
        return Some(format!(
            "Deletions are not refused: no ValidatingWebhookConfiguration has the webhook {NO_USAGES_WEBHOOK}; install plait with its webhook"
        ));
    }
    let trusted = |hook: &&Value| {
        let client = &hook["clientConfig"];
        client["url"].as_str().is_some_and(|url| !url.is_empty())
            || client["caBundle"]
                .as_str()
                .is_some_and(|bundle| !bundle.is_empty())
    };
    if hooks.iter().any(trusted) {
        return None;
    }
    Some(format!(
        "Deletions are not refused: the webhook {NO_USAGES_WEBHOOK} has no caBundle yet, so the API server cannot call it"
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn deletions_are_protected_only_by_a_nousages_webhook_the_api_server_can_call() {
        let configuration = |hooks: Value| json!({"webhooks": hooks});
        let hook = |name: &str, client: Value| json!({"name": name, "clientConfig": client});
        let service = json!({"service": {"name": "plait-webhook", "namespace": "plait-system"}});
        let with_ca = json!({"service": {"name": "plait-webhook"}, "caBundle": "LS0t"});
        // (configurations, protected, what an unprotected one says)
        let cases = [
            (vec![], false, "no ValidatingWebhookConfiguration has"),
            (
                vec![configuration(json!([hook(
                    "compositions.validate.plait.dev",
                    with_ca.clone()
                )]))],
                false,
                "no ValidatingWebhookConfiguration has",
            ),
            (
                vec![configuration(json!([hook(
                    NO_USAGES_WEBHOOK,
                    service.clone()
                )]))],
                false,
                "has no caBundle yet",
            ),
            (
                vec![configuration(json!([hook(NO_USAGES_WEBHOOK, with_ca)]))],
                true,
                "",
            ),
            (
                vec![
                    configuration(json!([hook(NO_USAGES_WEBHOOK, service)])),
                    configuration(json!([hook(
                        NO_USAGES_WEBHOOK,
                        json!({"url": "https://127.0.0.1:9443/validate-no-usages"})
                    )])),
                ],
                true,
                "",
            ),
        ];
        for (configurations, protected, says) in cases {
            let answer = unprotected_by(&configurations);
            assert_eq!(answer.is_none(), protected, "{configurations:?}");
            assert!(
                answer.unwrap_or_default().contains(says),
                "{configurations:?}"
            );
        }
    }
}
