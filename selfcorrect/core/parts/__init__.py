"""The parts of a work item, one module per kind (docs/rules.md §9.1).

A part is one contribution to a work item: a failure subject attributed to it, a validation
issue about it, its incomplete work, a person's reset. Each kind's module decides its parts
(what each would make the item, on its own) and, once core/work_item_decision.py has combined
them into the item's one decision, builds the outputs of the parts that decision lets act:

- `part`: the `Part` struct, each kind's escalation key, an item's pending micro-tasks;
- `shadow`: shadow mode, and the proposal a shadow rule journals instead of acting;
- `subject`: a failure subject's part; its entry facts, stuck prompt, escalation, journal;
- `issue`: a validation issue's part; its fix, directive, block, and its resolution;
- `work`: incomplete work's parts; micro-task files, handoffs, the task's escalation;
- `person`: a person's reset; the hand edits and passing reports acted on now;
- `circuit`: a rule's circuit, no item's part: its escalation and journal.

core/plan.py asks each module for its parts and its outputs. Pure: no I/O.
"""
