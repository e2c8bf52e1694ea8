"""The pilot's domain: what its records are and the rules over them, used by the stores and
the routes alike. Records (``records``: stored sessions, marks, articles; ``views``: what the
routes answer) and a session's states (``session_state``); a customer's conversation
(``conversation``, ``intake``, ``session_slots``, ``turn_http``, ``customer_view``,
``closing``, ``waiting``); the hand-off queue, where a waiting conversation is defined
(``queue``); the widget's tokens (``widget``); articles (``articles``, ``draft_lead``,
``model_draft``); the lead's reports (``reports``, ``outcomes``, ``breakdowns``, ``gaps``,
``topics``); what a staff key may read (``staff_reads``) and the desk's suggested reply
(``agent_assist``)."""
