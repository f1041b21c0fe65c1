"""What the people who run the service see of it in the admin: the overview of the accounts,
syncs, deletions, failing feeds and queues, the user page's links to each account's data, and
the admin's name, icon and index."""
