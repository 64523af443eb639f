//! Telling every listener of something that happened, each through a
//! channel of its own; a listener that went away is dropped at the next send.

use std::sync::{Mutex, PoisonError};

use futures::channel::mpsc::{UnboundedReceiver, UnboundedSender, unbounded};

pub struct Broadcast<T> {
    listeners: Mutex<Vec<UnboundedSender<T>>>,
}

impl<T> Default for Broadcast<T> {
    fn default() -> Self {
        Broadcast {
            listeners: Mutex::new(Vec::new()),
        }
    }
}

impl<T: Clone> Broadcast<T> {
    /// Everything sent from now on.
    pub fn subscribe(&self) -> UnboundedReceiver<T> {
        let (sender, receiver) = unbounded();
        self.lock().push(sender);
        receiver
    }

    pub fn send(&self, item: &T) {
        self.lock()
            .retain(|listener| listener.unbounded_send(item.clone()).is_ok());
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<UnboundedSender<T>>> {
        self.listeners
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn every_listener_gets_what_is_sent_after_it_subscribed_and_gone_ones_are_dropped() {
        let broadcast = Broadcast::default();
        broadcast.send(&0);
        let mut first = broadcast.subscribe();
        let second = broadcast.subscribe();
        broadcast.send(&1);
        drop(second);
        broadcast.send(&2);
        assert_eq!(first.try_recv().unwrap(), 1);
        assert_eq!(first.try_recv().unwrap(), 2);
        assert_eq!(broadcast.lock().len(), 1);
    }
}
