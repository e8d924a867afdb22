"""MariaDB scripts."""
