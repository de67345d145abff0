"""Access control as Bee's (pkg/accesscontrol): grantee lists, the ACT and its history."""
