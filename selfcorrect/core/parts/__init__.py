"""A work item's parts, one module per kind (docs/rules.md §9.1).

A part is one contribution to a work item: what a failure subject attributed to it, an issue
the validator reports about it, its incomplete work or a person's reset would make it, on its
own. Each module decides its kind's parts and, once core/work_item_decision.py has combined
them into the item's one decision, builds the outputs of the parts that decision lets act:
`part` (the Part struct, escalation keys, pending micro-tasks), `shadow` (shadow mode's
proposals), `subject`, `issue` (and its resolution), `work` (rules §11), `person` (resets, hand
edits, passing reports) and `circuit` (a rule's circuit: no item's part, outputs only).
"""
