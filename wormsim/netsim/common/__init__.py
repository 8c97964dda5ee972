"""What both engines share: the DAG runtime arrays, the flow plan, field tables, call budgets,
warm-up, max-min filling."""
