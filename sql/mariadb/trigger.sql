-- {{comment}}
CREATE OR REPLACE TRIGGER {{qualified}} AFTER {{event}} ON {{table}}
FOR EACH ROW
{{statement}};
