"""What subscriptions tell the apps that build on them.

Subscriptions import none of those apps: each connects its receivers in its AppConfig.ready()
(docs/architecture.md, "The dependency rule").
"""

from django.dispatch import Signal

# Sent inside the transaction of an add or a PATCH, with `user_id` and `urls`: the feed URLs whose
# identity (podcast:guid, new address) is worth checking once it commits.
feed_check_wanted = Signal()

# Sent, with `subscriptions`, inside the transaction of a change that a feed check (not the user)
# would make to them: a receiver answering True holds the change back. The deletions app does
# while a deletion of one of them is pending, which the change would make fail as a re-subscribe.
change_held = Signal()

# Sent, with `user_id` and `subscription_ids`, inside the transaction that marks subscriptions
# deleted: receivers delete what belongs to them in that transaction, so that it goes exactly
# when the subscription does (the episodes app deletes their episode actions).
subscriptions_deleted = Signal()

# Sent, with `subscriptions` (a queryset), when their feeds are named for people (the OPML
# export): a receiver answers it annotated with `feed_title`, "" where unknown, in the same query
# (the feedchecks app, which reads each feed's title).
feed_titles_wanted = Signal()
